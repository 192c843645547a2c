import { expect } from 'chai';
import request from 'supertest';
import {
  awsCreds,
  azureCreds,
  gcpCreds,
  makeIngress,
  validSummary,
  validTranscode,
} from './ingress-fixture.ts';

type Case = [
  name: string,
  path: string,
  body: Record<string, unknown>,
  status: number,
  message: RegExp,
];

const t = (over: Record<string, unknown>): Record<string, unknown> => ({
  ...validTranscode,
  ...over,
});
const s = (over: Record<string, unknown>): Record<string, unknown> => ({
  ...validSummary,
  ...over,
});
const without = (body: Record<string, unknown>, field: string): Record<string, unknown> => {
  const copy = { ...body };
  delete copy[field];
  return copy;
};
const wm = (watermark: unknown): Record<string, unknown> => t({ watermark });

const accepted: [string, string, Record<string, unknown>][] = [
  ['minimal transcode', '/transcode', validTranscode],
  ['h265 in mp4', '/transcode', t({ encoder: 'h265' })],
  ['vp8 in webm', '/transcode', t({ encoder: 'vp8', container: 'webm' })],
  ['vp9 in webm', '/transcode', t({ encoder: 'vp9', container: 'webm', bitrateKbps: '4000' })],
  ['vp9 in mp4', '/transcode', t({ encoder: 'vp9', bitrateKbps: '2000' })],
  ['size given', '/transcode', t({ width: 1280, height: 720 })],
  ['exactly 8K UHD', '/transcode', t({ width: 7680, height: 4320 })],
  [
    's3 input with aws creds',
    '/transcode',
    t({ inputUrl: 's3://bucket-1/a/b.mp4', inputCreds: awsCreds }),
  ],
  [
    'azure output with azure creds',
    '/transcode',
    t({ outputUrl: 'azure://container1/out.mp4', outputCreds: azureCreds }),
  ],
  [
    'gcp input with service account',
    '/transcode',
    t({ inputUrl: 'gcp://bucket_1/in.mp4', inputCreds: gcpCreds }),
  ],
  [
    'different stores in and out',
    '/transcode',
    t({
      inputUrl: 's3://bucket-1/in.mp4',
      inputCreds: awsCreds,
      outputUrl: 'gcp://bucket2/out.mp4',
      outputCreds: gcpCreds,
    }),
  ],
  [
    'callbacks',
    '/transcode',
    t({ successUrl: 'https://hooks.example.com/ok', failureUrl: 'http://hooks.example.com/fail' }),
  ],
  [
    'text watermark',
    '/transcode',
    wm({
      text: '100% "quoted": yes',
      fontSize: 24,
      fontColor: '#ff00aa',
      position: 'topLeft',
      opacity: 0,
    }),
  ],
  [
    'image url watermark',
    '/transcode',
    wm({ imageUrl: 'https://cdn.example.com/logo.png', width: 64, height: 32, opacity: 1 }),
  ],
  [
    'image name watermark',
    '/transcode',
    wm({ imageName: 'logo.png', width: 64, height: 32, position: 'bottomLeft' }),
  ],
  ['loudness to EBU R128', '/transcode', t({ loudness: { targetLufs: -23 } })],
  ['loudness with a ceiling', '/transcode', t({ loudness: { targetLufs: -14, truePeakDbtp: -2 } })],
  ['a trim with an end', '/transcode', t({ trim: { startSeconds: 1.5, endSeconds: 4 } })],
  ['a trim with a duration', '/transcode', t({ trim: { durationSeconds: 30 } })],
  ['gif summary', '/summary/gif', validSummary],
  [
    'mp4 summary with options',
    '/summary/mp4',
    s({ width: 640, removeAudio: true, watermark: { text: 'x', fontSize: 12 } }),
  ],
];

const rejected: Case[] = [
  [
    'missing inputUrl',
    '/transcode',
    without(validTranscode, 'inputUrl'),
    400,
    /^inputUrl is required$/,
  ],
  [
    'missing outputUrl',
    '/transcode',
    without(validTranscode, 'outputUrl'),
    400,
    /^outputUrl is required$/,
  ],
  [
    'missing encoder',
    '/transcode',
    without(validTranscode, 'encoder'),
    400,
    /^encoder is required$/,
  ],
  [
    'missing container',
    '/transcode',
    without(validTranscode, 'container'),
    400,
    /^container is required$/,
  ],
  [
    'missing bitrateKbps',
    '/transcode',
    without(validTranscode, 'bitrateKbps'),
    400,
    /^bitrateKbps is required$/,
  ],
  [
    'unknown encoder',
    '/transcode',
    t({ encoder: 'av1' }),
    400,
    /^encoder must be one of "h264", "h265", "vp8", "vp9"$/,
  ],
  [
    'unknown container',
    '/transcode',
    t({ container: 'mkv' }),
    400,
    /^container must be one of "mp4", "webm"$/,
  ],
  [
    'h264 in webm',
    '/transcode',
    t({ container: 'webm' }),
    400,
    /^encoder must be vp8 or vp9 when container is webm$/,
  ],
  [
    'h265 in webm',
    '/transcode',
    t({ encoder: 'h265', container: 'webm' }),
    400,
    /^encoder must be vp8 or vp9 when container is webm$/,
  ],
  [
    'bitrate as number',
    '/transcode',
    t({ bitrateKbps: 1000 }),
    400,
    /^bitrateKbps must be one of the strings "1000", "2000", "4000"$/,
  ],
  [
    'bitrate not allowed',
    '/transcode',
    t({ bitrateKbps: '3000' }),
    400,
    /^bitrateKbps must be one of the strings/,
  ],
  ['width zero', '/transcode', t({ width: 0 }), 400, /^width must be >= 2$/],
  ['width negative', '/transcode', t({ width: -4 }), 400, /^width must be >= 2$/],
  [
    'height fractional',
    '/transcode',
    t({ height: 720.5 }),
    400,
    /^height must be of type integer$/,
  ],
  ['height as string', '/transcode', t({ height: '720' }), 400, /^height must be of type integer$/],
  ['width too large', '/transcode', t({ width: 100000 }), 400, /^width must be <= 7680$/],
  [
    'ftp input',
    '/transcode',
    t({ inputUrl: 'ftp://x.example.com/a.mp4' }),
    400,
    /^inputUrl must be an http\(s\):\/\/<host>\/<path>, s3:\/\/<bucket>\/<path>/,
  ],
  [
    'bucket url without path',
    '/transcode',
    t({ outputUrl: 's3://bucket-only' }),
    400,
    /^outputUrl must be an http\(s\)/,
  ],
  [
    'url with user info',
    '/transcode',
    t({ inputUrl: 'https://user:pw@example.com/a.mp4' }),
    400,
    /^inputUrl must be/,
  ],
  [
    'url not a string',
    '/transcode',
    t({ inputUrl: 42 }),
    400,
    /^inputUrl must be an http\(s\):\/\/<host>\/<path>/,
  ],
  [
    's3 without creds',
    '/transcode',
    t({ inputUrl: 's3://bucket-1/in.mp4' }),
    400,
    /^inputCreds is required when inputUrl is an s3:\/\/ URL$/,
  ],
  [
    'azure without creds',
    '/transcode',
    t({ outputUrl: 'azure://container1/o.mp4' }),
    400,
    /^outputCreds is required when outputUrl is an azure:\/\/ URL$/,
  ],
  [
    'gcp without creds',
    '/summary/mp4',
    s({ inputUrl: 'gcp://bucket1/in.mp4' }),
    400,
    /^inputCreds is required when inputUrl is a gcp:\/\/ URL$/,
  ],
  [
    's3 with azure creds',
    '/transcode',
    t({ inputUrl: 's3://bucket-1/in.mp4', inputCreds: azureCreds }),
    400,
    /^inputCreds\.(region is required|accountName is not a known field)$/,
  ],
  [
    'azure with aws creds',
    '/transcode',
    t({ outputUrl: 'azure://container1/o.mp4', outputCreds: awsCreds }),
    400,
    /^outputCreds\.(accountName is required|region is not a known field)$/,
  ],
  [
    'gcp creds missing private_key',
    '/transcode',
    t({ inputUrl: 'gcp://bucket-1/in.mp4', inputCreds: { ...gcpCreds, private_key: undefined } }),
    400,
    /^inputCreds\.private_key is required$/,
  ],
  [
    'creds for an http url',
    '/transcode',
    t({ inputCreds: awsCreds }),
    400,
    /^inputCreds must not be sent when inputUrl is an http\(s\) URL$/,
  ],
  [
    'creds not an object',
    '/transcode',
    t({ inputUrl: 's3://bucket-1/in.mp4', inputCreds: 'key' }),
    400,
    /^inputCreds must be of type object$/,
  ],
  [
    'unknown top-level field',
    '/transcode',
    t({ preset: 'fast' }),
    400,
    /^preset is not a known field$/,
  ],
  [
    'unknown creds field',
    '/transcode',
    t({ inputUrl: 's3://bucket-1/in.mp4', inputCreds: { ...awsCreds, sessionToken: 'x' } }),
    400,
    /^inputCreds\.sessionToken is not a known field$/,
  ],
  [
    'successUrl not http',
    '/transcode',
    t({ successUrl: 's3://b/x' }),
    400,
    /^successUrl must be an http:\/\/ or https:\/\/ URL/,
  ],
  [
    'failureUrl not a url',
    '/transcode',
    t({ failureUrl: 'not a url' }),
    400,
    /^failureUrl must be an http:\/\/ or https:\/\/ URL/,
  ],
  [
    'watermark empty',
    '/transcode',
    wm({}),
    400,
    /^watermark must have one of text, imageUrl or imageName$/,
  ],
  [
    'watermark two variants',
    '/transcode',
    wm({ text: 'a', fontSize: 10, imageName: 'x', width: 1, height: 1 }),
    400,
    /^watermark must have only one of text, imageUrl or imageName$/,
  ],
  [
    'text watermark without fontSize',
    '/transcode',
    wm({ text: 'a' }),
    400,
    /^watermark\.fontSize is required$/,
  ],
  [
    'text watermark empty text',
    '/transcode',
    wm({ text: '', fontSize: 10 }),
    400,
    /^watermark\.text must NOT have fewer than 1 characters$/,
  ],
  [
    'fontSize not int',
    '/transcode',
    wm({ text: 'a', fontSize: 10.5 }),
    400,
    /^watermark\.fontSize must be of type integer$/,
  ],
  [
    'fontColor not allowed',
    '/transcode',
    wm({ text: 'a', fontSize: 10, fontColor: 'red:x=0' }),
    400,
    /^watermark\.fontColor must be one of white/,
  ],
  [
    'opacity above 1',
    '/transcode',
    wm({ text: 'a', fontSize: 10, opacity: 1.01 }),
    400,
    /^watermark\.opacity must be <= 1$/,
  ],
  [
    'opacity below 0',
    '/transcode',
    wm({ text: 'a', fontSize: 10, opacity: -0.1 }),
    400,
    /^watermark\.opacity must be >= 0$/,
  ],
  [
    'position unknown',
    '/transcode',
    wm({ text: 'a', fontSize: 10, position: 'center' }),
    400,
    /^watermark\.position must be one of "topLeft", "topRight", "bottomLeft", "bottomRight"$/,
  ],
  [
    'image watermark without width',
    '/transcode',
    wm({ imageUrl: 'https://x.example.com/l.png', height: 10 }),
    400,
    /^watermark\.width is required$/,
  ],
  [
    'image watermark height 0',
    '/transcode',
    wm({ imageUrl: 'https://x.example.com/l.png', height: 0, width: 10 }),
    400,
    /^watermark\.height must be >= 1$/,
  ],
  [
    'image watermark url not http',
    '/transcode',
    wm({ imageUrl: 's3://b/l.png', height: 10, width: 10 }),
    400,
    /^watermark\.imageUrl must be an http:\/\/ or https:\/\/ URL/,
  ],
  [
    'image name watermark width 0',
    '/summary/gif',
    s({ watermark: { imageName: 'logo', height: 10, width: 0 } }),
    400,
    /^watermark\.width must be >= 1$/,
  ],
  [
    'text watermark with width',
    '/transcode',
    wm({ text: 'a', fontSize: 10, width: 5 }),
    400,
    /^watermark\.width is not a known field$/,
  ],
  [
    'summary with encoder',
    '/summary/gif',
    s({ encoder: 'h264' }),
    400,
    /^encoder is not a known field$/,
  ],
  [
    'summary with container',
    '/summary/mp4',
    s({ container: 'mp4' }),
    400,
    /^container is not a known field$/,
  ],
  [
    'summary with bitrateKbps',
    '/summary/mp4',
    s({ bitrateKbps: '1000' }),
    400,
    /^bitrateKbps is not a known field$/,
  ],
  ['summary with height', '/summary/gif', s({ height: 100 }), 400, /^height is not a known field$/],
  [
    'removeAudio not boolean',
    '/summary/mp4',
    s({ removeAudio: 'yes' }),
    400,
    /^removeAudio must be of type boolean$/,
  ],
  ['summary width zero', '/summary/gif', s({ width: 0 }), 400, /^width must be >= 2$/],
  [
    'width × height over the 8K UHD pixel budget',
    '/transcode',
    t({ width: 7680, height: 4322 }),
    400,
    /^width × height \(7680×4322 = 33192960 pixels\) must be at most 33177600 pixels$/,
  ],
  ['missing apiKey', '/transcode', without(validTranscode, 'apiKey'), 401, /^apiKey is required$/],
  [
    'wrong apiKey',
    '/transcode',
    t({ apiKey: 'not-a-key-0123456789' }),
    401,
    /^apiKey is not valid$/,
  ],
  ['apiKey not a string', '/summary/gif', s({ apiKey: 12345 }), 401, /^apiKey is not valid$/],
  [
    'loopback input',
    '/transcode',
    t({ inputUrl: 'http://127.0.0.1/a.mp4' }),
    400,
    /^inputUrl points at a loopback, private or reserved address/,
  ],
  [
    'metadata output',
    '/transcode',
    t({ outputUrl: 'http://169.254.169.254/latest' }),
    400,
    /^outputUrl points at a link-local or cloud metadata address/,
  ],
  [
    'private callback',
    '/transcode',
    t({ successUrl: 'http://10.1.2.3/hook' }),
    400,
    /^successUrl points at a loopback/,
  ],
  [
    'localhost watermark',
    '/transcode',
    wm({ imageUrl: 'http://localhost/l.png', height: 10, width: 10 }),
    400,
    /^watermark\.imageUrl points at a name of this machine/,
  ],
  [
    'ipv6 loopback input',
    '/summary/mp4',
    s({ inputUrl: 'http://[::1]/a.mp4' }),
    400,
    /^inputUrl points at a loopback/,
  ],
  [
    'ipv4-mapped ipv6',
    '/summary/mp4',
    s({ inputUrl: 'http://[::ffff:7f00:1]/a.mp4' }),
    400,
    /^inputUrl points at a loopback/,
  ],
];

describe('ingress: every field rule, through the HTTP app', () => {
  let server: Awaited<ReturnType<typeof makeIngress>>['server'];
  before(async () => {
    ({ server } = await makeIngress());
  });

  for (const [name, path, body] of accepted) {
    it(`accepts ${name}`, async () => {
      const res = await request(server).post(path).send(body);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(Object.keys(res.body as object).sort()).to.deep.equal(['createdAt', 'id', 'status']);
      expect(res.body.status).to.equal('queued');
      expect(res.body.id).to.match(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      expect(res.body.createdAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
      expect(Math.abs(Date.parse(res.body.createdAt as string) - Date.now())).to.be.below(5000);
    });
  }

  for (const [name, path, body, status, message] of rejected) {
    it(`rejects ${name} with ${status}`, async () => {
      const res = await request(server).post(path).send(body);
      expect(res.status).to.equal(status);
      expect(res.headers['content-type']).to.match(/^application\/json/);
      expect(Object.keys(res.body as object)).to.deep.equal(['error']);
      expect(res.body.error).to.match(message);
    });
  }
});

describe('ingress: a request with several problems names them all in its one error', () => {
  const cases: [string, string, Record<string, unknown>, string][] = [
    [
      'two fields missing and one out of range',
      '/transcode',
      without(without(t({ width: 0 }), 'inputUrl'), 'encoder'),
      'width must be >= 2; inputUrl is required; encoder is required',
    ],
    [
      'a bad watermark, an unknown field and a bad callback',
      '/summary/mp4',
      s({ watermark: { text: 'x' }, preset: 'fast', successUrl: 'ftp://hooks.example.com' }),
      'successUrl must be an http:// or https:// URL without user info; watermark.fontSize is required; preset is not a known field',
    ],
    [
      'a loudness target out of range beside a bad width',
      '/transcode',
      t({ loudness: { targetLufs: 3 }, width: 0 }),
      'width must be >= 2; loudness.targetLufs must be <= -5',
    ],
    [
      'a loudness ceiling above 0 dBTP',
      '/transcode',
      t({ loudness: { targetLufs: -16, truePeakDbtp: 1 } }),
      'loudness.truePeakDbtp must be <= 0',
    ],
    [
      'a trim with both an end and a duration, beside a negative start elsewhere',
      '/transcode',
      t({ trim: { endSeconds: 4, durationSeconds: 2 }, width: -1 }),
      'width must be >= 2; trim takes endSeconds or durationSeconds, not both',
    ],
    [
      'an empty trim',
      '/transcode',
      t({ trim: {} }),
      'trim must name at least one of startSeconds, endSeconds, durationSeconds',
    ],
    [
      'a trim that ends before it starts',
      '/transcode',
      t({ trim: { startSeconds: 5, endSeconds: 4 } }),
      'trim.endSeconds (4) must be after trim.startSeconds (5)',
    ],
    [
      'a loudness without its target',
      '/transcode',
      t({ loudness: { truePeakDbtp: -1 } }),
      'loudness.targetLufs is required',
    ],
    [
      'a bucket URL without its creds and a bad bitrate',
      '/transcode',
      t({ inputUrl: 's3://bucket-1/in.mp4', bitrateKbps: 1000 }),
      'bitrateKbps must be one of the strings "1000", "2000", "4000"; inputCreds is required when inputUrl is an s3:// URL',
    ],
  ];
  for (const [name, path, body, error] of cases)
    it(name, async () => {
      const { server } = await makeIngress();
      const res = await request(server).post(path).send(body);
      expect(res.status).to.equal(400);
      expect(res.body).to.deep.equal({ error });
    });
});

describe('ingress: ALLOW_PRIVATE_NETWORKS opens private networks, never metadata', () => {
  const metadataUrls: [string, Record<string, unknown>][] = [
    ['inputUrl', t({ inputUrl: 'http://169.254.169.254/latest/meta-data/' })],
    ['outputUrl', t({ outputUrl: 'http://[fd00:ec2::254]/latest' })],
    ['successUrl', t({ successUrl: 'http://metadata.google.internal/computeMetadata/v1/' })],
    ['failureUrl', t({ failureUrl: 'http://[::ffff:169.254.169.254]/x' })],
    ['watermark.imageUrl', wm({ imageUrl: 'http://[fe80::1]/l.png', height: 10, width: 10 })],
  ];
  for (const [field, body] of metadataUrls)
    it(`refuses a metadata ${field} with 400`, async () => {
      const { server } = await makeIngress({ allowPrivateNetworks: true });
      const res = await request(server).post('/transcode').send(body);
      expect(res.status).to.equal(400);
      expect(res.body.error).to.match(
        new RegExp(
          `^${field.replace('.', '\\.')} points at a (link-local or cloud metadata address|cloud metadata host name)`,
        ),
      );
    });

  it('takes a loopback file server', async () => {
    const { server } = await makeIngress({ allowPrivateNetworks: true });
    expect(
      (
        await request(server)
          .post('/transcode')
          .send(t({ inputUrl: 'http://127.0.0.1:8081/a.mp4' }))
      ).status,
    ).to.equal(200);
  });
});
