import { expect } from 'chai';
import { MediaError } from '../../../services/core/errors.ts';
import { parseBucketUrl, type BucketScheme } from '../../../services/core/storage/bucket-url.ts';

function refusal(
  url: string,
  scheme: BucketScheme,
  side: 'input' | 'output' = 'input',
): MediaError {
  try {
    parseBucketUrl(url, scheme, side);
  } catch (error) {
    expect(error).to.be.instanceOf(MediaError);
    return error as MediaError;
  }
  throw new Error(`${url} was accepted`);
}

describe('bucket URLs', () => {
  it('splits bucket and key, keeping the key as written', () => {
    expect(parseBucketUrl('s3://my-bucket/a/b c%20d.mp4', 's3', 'input')).to.deep.equal({
      bucket: 'my-bucket',
      key: 'a/b c%20d.mp4',
    });
    expect(parseBucketUrl('azure://videos/in/x.mp4?v=1#t', 'azure', 'input')).to.deep.equal({
      bucket: 'videos',
      key: 'in/x.mp4?v=1#t',
    });
    expect(parseBucketUrl('gcp://my_bucket.example/x', 'gcp', 'output')).to.deep.equal({
      bucket: 'my_bucket.example',
      key: 'x',
    });
  });

  it('refuses another scheme, a missing key and a folder-like key, as *_rejected of the side', () => {
    expect(refusal('gcp://bucket/x', 's3').code).to.equal('input_rejected');
    expect(refusal('s3://bucket', 's3', 'output').code).to.equal('output_rejected');
    expect(refusal('s3://bucket/', 's3').code).to.equal('input_rejected');
    expect(refusal('s3://bucket/dir/', 's3').code).to.equal('input_rejected');
    expect(refusal(`s3://bucket/${'k'.repeat(1025)}`, 's3').code).to.equal('input_rejected');
    expect(refusal('s3://bucket/a\nb', 's3').code).to.equal('input_rejected');
  });

  it("holds bucket names to each provider's rules, since they can become host names", () => {
    for (const bad of ['Upper', 'a', 'under_score', 'evil.com#', 'x@y', '-lead', 'trail-'])
      refusal(`s3://${bad}/k`, 's3');
    for (const bad of ['dots.not.allowed', 'double--dash', 'under_score'])
      refusal(`azure://${bad}/k`, 'azure');
    refusal('gcp://UPPER/k', 'gcp');
  });
});
