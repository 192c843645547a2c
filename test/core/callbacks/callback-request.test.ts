import { expect } from 'chai';
import {
  deliveryRecordId,
  parseDeliveryRecordId,
} from '../../../services/core/callbacks/callback-request.ts';

describe('callback delivery record ids', () => {
  it('name a chain and an attempt, and read back as such', () => {
    const chain = '6f1c2e0a-0000-4000-8000-000000000001:media.job.succeeded:1';
    expect(deliveryRecordId(chain, 3)).to.equal(`${chain}:callback:3`);
    expect(parseDeliveryRecordId(deliveryRecordId(chain, 3))).to.deep.equal({ chain, attempt: 3 });
  });

  it('read a random id of an older release as a chain of its own at attempt 0', () => {
    const id = '0b9e6a0c-9d3c-4b43-9a57-2f0e5d2c7c11';
    expect(parseDeliveryRecordId(id)).to.deep.equal({ chain: id, attempt: 0 });
    expect(deliveryRecordId(parseDeliveryRecordId(id).chain, 2)).to.equal(`${id}:callback:2`);
  });
});
