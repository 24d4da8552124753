import { audioAttachment } from './attachment';

describe('audioAttachment', () => {
  it('names the file after the resource with the extension of its type', () => {
    expect(audioAttachment('vc_abc', 'audio/wav')).toBe('attachment; filename="vc_abc.wav"');
    expect(audioAttachment('speech_req_1', 'audio/mpeg')).toBe('attachment; filename="speech_req_1.mp3"');
    expect(audioAttachment('speech', 'audio/L16;rate=16000;channels=1')).toBe('attachment; filename="speech.pcm"');
    expect(audioAttachment('x', 'application/unknown')).toBe('attachment; filename="x.bin"');
  });

  it('keeps the header safe whatever the name holds', () => {
    expect(audioAttachment('a"b\r\nc', 'audio/flac')).toBe('attachment; filename="a_b__c.flac"');
  });
});
