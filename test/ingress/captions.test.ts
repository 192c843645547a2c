// Issue 30's captions at the ingress: a bad `captions` gets one 400 {error} naming every
// problem, caption URLs pass the address policy as every caller URL does, and nothing is queued.
import { expect } from 'chai';
import request from 'supertest';
import { topics, type OutgoingRecord } from '../../services/core/bus/event-bus.ts';
import { decodeAll, recordingBus } from '../notifier/notifier-fixture.ts';
import { makeIngress, validTranscode } from './ingress-fixture.ts';

const t = (captions: unknown): Record<string, unknown> => ({ ...validTranscode, captions });
const file = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  url: 'https://media.example.com/en.srt',
  language: 'en',
  label: 'English',
  ...over,
});
const queued = (published: readonly OutgoingRecord[]): OutgoingRecord[] =>
  published.filter((r) => r.topic === topics.transcodeRequests);

const refused: [string, Record<string, unknown>, string][] = [
  ['an empty captions', t({}), 'captions must name at least one of keepInput, files, burnIn'],
  [
    'a file without a language, a bad label and a URL that is not http(s)',
    t({ files: [{ url: 'ftp://x.example.com/a.srt', label: 'A\u0007' }] }),
    'captions.files[0].language is required; captions.files[0].url must be an http:// or https:// URL without user info; captions.files[0].label must not hold control characters',
  ],
  [
    'a language that is not BCP 47, and nine files',
    t({ files: [file({ language: 'english' }), ...Array.from({ length: 8 }, () => file())] }),
    'captions.files must NOT have more than 8 items; captions.files[0].language must be a BCP 47 language tag such as en or pt-BR',
  ],
  [
    'a burn-in of both a file and an input track, and keepInput not a boolean',
    t({ keepInput: 'yes', files: [file()], burnIn: { file: 0, inputTrack: 0 } }),
    'captions.keepInput must be of type boolean; captions.burnIn takes file or inputTrack, not both',
  ],
  [
    'a burn-in of a file that is not given, beside a trim that ends before it starts',
    { ...t({ files: [file()], burnIn: { file: 1 } }), trim: { startSeconds: 5, endSeconds: 4 } },
    'trim.endSeconds (4) must be after trim.startSeconds (5); captions.burnIn.file (1) must name one of captions.files (0 to 0)',
  ],
  [
    'a burn-in of a file without files',
    t({ burnIn: { file: 0 } }),
    'captions.burnIn.file (0) must name one of captions.files (none given)',
  ],
  [
    'a caption URL at a cloud metadata address',
    t({ files: [file(), file({ url: 'http://169.254.169.254/latest/meta-data/' })] }),
    'captions.files[1].url points at a link-local or cloud metadata address, which this service does not reach',
  ],
];

describe('ingress: captions', () => {
  for (const [name, body, error] of refused)
    it(`refuses ${name} with 400 {error}, nothing queued`, async () => {
      const bus = recordingBus();
      const { server } = await makeIngress({ bus, allowPrivateNetworks: true });
      const res = await request(server).post('/transcode').send(body);
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(res.body).to.deep.equal({ error });
      expect(queued(bus.published)).to.have.length(0);
    });

  it('refuses a caption URL on a private network unless ALLOW_PRIVATE_NETWORKS', async () => {
    const bus = recordingBus();
    const { server } = await makeIngress({ bus });
    const body = t({ files: [file({ url: 'http://10.1.2.3/en.vtt' })] });
    const res = await request(server).post('/transcode').send(body);
    expect(res.status).to.equal(400);
    expect(res.body.error).to.match(/^captions\.files\[0\]\.url points at a (private|loopback)/);
    expect(queued(bus.published)).to.have.length(0);
  });

  it('queues a job with its captions as asked', async () => {
    const bus = recordingBus();
    const { server } = await makeIngress({ bus });
    const captions = { keepInput: false, files: [file()], burnIn: { file: 0 } };
    const res = await request(server).post('/transcode').send(t(captions));
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const [job] = decodeAll(queued(bus.published));
    expect(job?.type === 'media.job.requested' && job.data.transcode?.captions).to.deep.equal(
      captions,
    );
  });
});
