import { literalHostBlocked, webhookUrlProblem } from './webhook-url';

describe('webhookUrlProblem', () => {
  it('accepts http and https URLs with any host, port and path', () => {
    for (const url of [
      'https://hooks.example.com/svc',
      'http://localhost:8080/x?y=1',
      'https://[2606:4700::1]/hook',
      'http://10.0.0.1/',
    ]) {
      expect(webhookUrlProblem(url)).toBeNull();
    }
  });

  it('refuses other schemes, relative text, credentials and very long URLs', () => {
    expect(webhookUrlProblem('ftp://example.com/')).toMatch(/http or https, not ftp/);
    expect(webhookUrlProblem('file:///etc/passwd')).toMatch(/not file/);
    expect(webhookUrlProblem('example.com/hook')).toMatch(/absolute/);
    expect(webhookUrlProblem('https://user:pw@example.com/')).toMatch(/credentials/);
    expect(webhookUrlProblem(`https://example.com/${'a'.repeat(2100)}`)).toMatch(/at most 2048/);
  });
});

describe('literalHostBlocked', () => {
  it('names the range of a private literal address, in every spelling the URL parser normalises', () => {
    expect(literalHostBlocked('http://127.0.0.1:3000/')).toEqual({ address: '127.0.0.1', range: 'loopback' });
    expect(literalHostBlocked('http://2130706433/')).toEqual({ address: '127.0.0.1', range: 'loopback' });
    expect(literalHostBlocked('http://0x7f.1/')).toEqual({ address: '127.0.0.1', range: 'loopback' });
    expect(literalHostBlocked('http://[::1]:80/')).toEqual({ address: '::1', range: 'loopback' });
    expect(literalHostBlocked('http://[::ffff:169.254.169.254]/')).toMatchObject({ range: 'metadata' });
  });

  it('blocks localhost names as loopback without a lookup', () => {
    for (const url of ['http://localhost/', 'http://LocalHost.:8080/x', 'https://api.localhost/hook']) {
      expect(literalHostBlocked(url)).toMatchObject({ range: 'loopback' });
    }
  });

  it('leaves public literals and other hostnames to the delivery-time check', () => {
    expect(literalHostBlocked('https://8.8.8.8/')).toBeNull();
    expect(literalHostBlocked('https://hooks.example.com/')).toBeNull();
    expect(literalHostBlocked('https://notlocalhost.example/')).toBeNull();
  });
});
