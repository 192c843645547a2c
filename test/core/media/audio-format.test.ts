import { expect } from 'chai';
import {
  audioEncoderArgs,
  audioFormatFilter,
  audioTarget,
} from '../../../services/core/media/audio-format.ts';
import { audioInfo } from '../../support/job-input.ts';

describe('audio layout and rate per encoder', () => {
  it('5.1(side) (AC-3 from cameras and DVDs, which libopus refuses) becomes 5.1 for Opus and AAC', () => {
    const side = audioInfo({ codec: 'ac3', channels: 6, layout: '5.1(side)', sampleRate: 48000 });
    expect(audioFormatFilter(side, 'opus')).to.equal(
      'aresample=async=1,aformat=sample_rates=48000:channel_layouts=5.1',
    );
    expect(audioFormatFilter(side, 'aac')).to.equal(
      'aresample=async=1,aformat=sample_rates=48000:channel_layouts=5.1',
    );
    expect(audioEncoderArgs(side, 'opus')).to.deep.equal(['-c:a', 'libopus', '-b:a', '256k']);
  });

  it('quad, 7.1 and unnamed layouts are down-mixed to stereo; mono stays mono', () => {
    for (const channels of [3, 4, 5, 8])
      expect(audioTarget(audioInfo({ channels }), 'aac').layout, `${channels}`).to.equal('stereo');
    expect(audioTarget(audioInfo({ channels: 1, layout: 'mono' }), 'opus')).to.deep.equal({
      layout: 'mono',
      sampleRate: 48000,
      channels: 1,
    });
  });

  it('Opus always at 48 kHz; AAC keeps a rate it takes and resamples others', () => {
    expect(audioTarget(audioInfo({ sampleRate: 22050 }), 'opus').sampleRate).to.equal(48000);
    expect(audioTarget(audioInfo({ sampleRate: 22050 }), 'aac').sampleRate).to.equal(22050);
    expect(audioTarget(audioInfo({ sampleRate: 44100 }), 'aac').sampleRate).to.equal(44100);
    expect(audioTarget(audioInfo({ sampleRate: 37800 }), 'aac').sampleRate).to.equal(48000);
  });
});
