import { TaskVoice } from './task-voice';

describe('TaskVoice', () => {
  it('hands out chunks in order, and those a switch gives back before the later ones', () => {
    const voice = new TaskVoice(null, [4, 1, 2, 3]);
    expect([voice.take(), voice.take()]).toEqual([1, 2]);
    voice.giveBack([5, 3]);
    expect([voice.take(), voice.take(), voice.take(), voice.take()]).toEqual([3, 4, 5, undefined]);
  });

  it('holds the other lanes while a chunk waits for its step, and lets them go when it is done', async () => {
    const voice = new TaskVoice(null, [0, 1]);
    voice.take();
    voice.hold(0);
    let released = false;
    const held = voice.clear(new AbortController().signal).then(() => (released = true));
    await Promise.resolve();
    expect(released).toBe(false);
    voice.finish(0);
    await held;
    expect(released).toBe(true);
  });

  it('lets a held lane go when the task stops', async () => {
    const voice = new TaskVoice(null, [0]);
    voice.hold(0);
    const stop = new AbortController();
    const held = voice.clear(stop.signal);
    stop.abort();
    await expect(held).resolves.toBeUndefined();
  });

  it('lets a chunk switch the voice only when no earlier chunk is still being spoken', () => {
    const voice = new TaskVoice(null, [2, 3]);
    voice.take();
    voice.take();
    expect(voice.speakingBefore(3)).toBe(true);
    expect(voice.speakingBefore(2)).toBe(false);
    voice.finish(2);
    expect(voice.speakingBefore(3)).toBe(false);
  });
});
