import { expect } from 'chai';
import { open, seal } from '../../../services/core/crypto/secret-box.ts';

describe('secret box (AES-256-GCM)', () => {
  const k1 = { id: 'k1', key: Buffer.alloc(32, 1) };
  const k2 = { id: 'k2', key: Buffer.alloc(32, 2) };
  const creds = { accountName: 'acct', accountKey: 'secret==' };

  it('round-trips with the key its id names, and hides the value', () => {
    const sealed = seal(creds, k2, 'job-1');
    expect(JSON.stringify(sealed)).not.to.contain('secret==');
    expect(open(sealed, [k1, k2], 'job-1')).to.deep.equal(creds);
  });

  it('gives every seal an IV of its own, across refills of the IV pool', () => {
    const ivs = new Set<string>();
    for (let i = 0; i < 1500; i++) {
      const sealed = seal(creds, k1, `job-${i}`);
      expect(Buffer.from(sealed.iv, 'base64')).to.have.length(12);
      ivs.add(sealed.iv);
      if (i % 250 === 0) expect(open(sealed, [k1], `job-${i}`)).to.deep.equal(creds);
    }
    expect(ivs.size).to.equal(1500);
  });

  it('does not open for another job, a tampered text, or an unknown key id', () => {
    const sealed = seal(creds, k1, 'job-1');
    expect(() => open(sealed, [k1], 'job-2')).to.throw();
    const bytes = Buffer.from(sealed.ciphertext, 'base64');
    bytes[0] = (bytes[0] ?? 0) ^ 1;
    expect(() =>
      open({ ...sealed, ciphertext: bytes.toString('base64') }, [k1], 'job-1'),
    ).to.throw();
    expect(() => open(sealed, [k2], 'job-1')).to.throw(/no sealing key with id k1/);
  });
});
