import { expect } from 'chai';
import { namedImagePath } from '../../../services/core/watermarks/watermark-library.ts';

describe('named watermark images', () => {
  it('live in <dir>/<orgId>/<name>', () => {
    expect(namedImagePath('/srv/wm', 'acme', 'logo.png')).to.equal('/srv/wm/acme/logo.png');
  });

  it('an orgId or a name from an event can never reach outside its own folder', () => {
    for (const [org, name] of [
      ['..', 'acme/logo.png'],
      ['.', 'logo.png'],
      ['acme', '../other/logo.png'],
      ['acme', '/etc/passwd'],
      ['acme/../other', 'logo.png'],
      ['acme', 'sub/logo.png'],
      ['', 'logo.png'],
    ])
      expect(() => namedImagePath('/srv/wm', org ?? '', name ?? ''), `${org} ${name}`).to.throw(
        /no watermark image named/,
      );
  });
});
