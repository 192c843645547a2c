import { expect } from 'chai';
import {
  checkDurability,
  creationConfig,
  durabilityShortfalls,
  durabilityTarget,
  TopicDurabilityError,
} from '../../../services/core/bus/topic-durability.ts';
import { ConfigError } from '../../../services/core/settings.ts';

describe('Kafka: topic durability', () => {
  describesDurabilityTarget();

  describesExistingTopics();
});

function describesDurabilityTarget(): void {
  describe('durabilityTarget', () => {
    it('keeps one replica and leaves min.insync.replicas to a single broker', () => {
      const target = durabilityTarget({}, 1);
      expect(target).to.deep.equal({
        replicationFactor: 1,
        minInsyncReplicas: undefined,
        warnings: [],
      });
      expect(creationConfig(target)).to.deep.equal([]);
    });

    it('gives 3 replicas and min.insync.replicas 2 on a cluster of 3 or more', () => {
      for (const brokers of [3, 5]) {
        const target = durabilityTarget({}, brokers);
        expect(target).to.deep.equal({ replicationFactor: 3, minInsyncReplicas: 2, warnings: [] });
        expect(creationConfig(target)).to.deep.equal([{ name: 'min.insync.replicas', value: '2' }]);
      }
    });

    it("takes a smaller cluster's size, with a warning, and requires one in-sync copy of two", () => {
      const target = durabilityTarget({}, 2);
      expect(target.replicationFactor).to.equal(2);
      expect(target.minInsyncReplicas).to.equal(1);
      expect(target.warnings).to.have.length(1);
      expect(target.warnings[0]).to.match(/2 brokers: topics get 2 replicas instead of 3/);
    });

    it('follows the settings when they are given, on any cluster', () => {
      expect(durabilityTarget({ replicationFactor: 5, minInsyncReplicas: 3 }, 7)).to.deep.equal({
        replicationFactor: 5,
        minInsyncReplicas: 3,
        warnings: [],
      });
      expect(durabilityTarget({ replicationFactor: 3 }, 1).minInsyncReplicas).to.equal(2);
      expect(durabilityTarget({ minInsyncReplicas: 1 }, 3).minInsyncReplicas).to.equal(1);
      expect(durabilityTarget({ minInsyncReplicas: 1 }, 1).minInsyncReplicas).to.equal(1);
    });

    it('refuses a min.insync.replicas above the replication factor (no write could succeed)', () => {
      expect(() => durabilityTarget({ minInsyncReplicas: 2 }, 1))
        .to.throw(TopicDurabilityError, /KAFKA_MIN_INSYNC_REPLICAS is 2, above the 1 replicas/)
        .that.is.instanceOf(ConfigError);
      expect(() => durabilityTarget({ replicationFactor: 3, minInsyncReplicas: 4 }, 3)).to.throw(
        TopicDurabilityError,
      );
    });
  });
}

function describesExistingTopics(): void {
  describe('existing topics', () => {
    const cluster = durabilityTarget({}, 3);
    const durable = { topic: 'a', replicas: 3, minInsyncReplicas: 2 };

    it('lets through topics as durable as the target or more', () => {
      const more = { topic: 'b', replicas: 5, minInsyncReplicas: 3 };
      expect(durabilityShortfalls(cluster, [durable, more])).to.deep.equal([]);
      expect(checkDurability({}, cluster, [durable, more])).to.equal(undefined);
    });

    it('names each topic with fewer replicas or a lower min.insync.replicas, and what it lacks', () => {
      const shortfalls = durabilityShortfalls(cluster, [
        durable,
        { topic: 'one-copy', replicas: 1, minInsyncReplicas: 1 },
        { topic: 'loose', replicas: 3, minInsyncReplicas: 1 },
      ]);
      expect(shortfalls).to.deep.equal([
        'one-copy (1 replicas, 3 configured; min.insync.replicas 1, 2 configured)',
        'loose (min.insync.replicas 1, 2 configured)',
      ]);
    });

    it('refuses the start, naming the switch, unless the switch is set; then it only warns', () => {
      const weak = [{ topic: 'one-copy', replicas: 1, minInsyncReplicas: 1 }];
      expect(() => checkDurability({}, cluster, weak)).to.throw(
        TopicDurabilityError,
        /topics less durable than configured: one-copy \(1 replicas.*KAFKA_ALLOW_LESS_DURABLE_TOPICS=true/,
      );
      expect(checkDurability({ allowLessDurable: true }, cluster, weak)).to.match(
        /^topics less durable than configured: one-copy/,
      );
    });

    it('holds no topic of a single broker to a min.insync.replicas it did not ask for', () => {
      const single = durabilityTarget({}, 1);
      expect(
        durabilityShortfalls(single, [{ topic: 'a', replicas: 1, minInsyncReplicas: 1 }]),
      ).to.deep.equal([]);
    });
  });
}
