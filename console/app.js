// The gateway console: plain browser JavaScript, no build step, no network but this origin.
// The proxy key lives in this tab's sessionStorage only and is sent only to this origin's API.

const KEY_STORAGE = 'svc-console-key';
const STREAM_PATH = '/v1/audio/speech/stream';
const TICKETS_PATH = `${STREAM_PATH}/tickets`;
const HEALTH_POLL_MS = 2000;
const USAGE_PAGE = 10;

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- key and API

const key = () => sessionStorage.getItem(KEY_STORAGE) ?? '';

function showError(message) {
  const box = $('error');
  box.textContent = message;
  box.hidden = !message;
}

/** A failed API answer, with the gateway's error body when there is one. */
class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ? `${status} ${body.error.code ?? ''}: ${body.error.message}` : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(path, options = {}) {
  if (!key()) throw new Error('Paste a proxy key first.');
  const res = await fetch(path, {
    ...options,
    headers: { Authorization: `Bearer ${key()}`, ...(options.headers ?? {}) },
  });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  return res;
}
const apiJson = async (path, options) => (await api(path, options)).json();

/** `accepted`: what the gateway said of the key (null while not yet asked). */
function setKeyStatus(accepted = null) {
  const status = $('key-status');
  const tail = `key …${key().slice(-4)}`;
  status.textContent = !key()
    ? 'no key'
    : accepted === false
      ? `${tail} is not accepted by the gateway`
      : `${tail}${accepted ? ' accepted' : ''} (this tab only)`;
  status.classList.toggle('bad', Boolean(key()) && accepted === false);
}

$('key-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = $('key').value.trim();
  if (value) sessionStorage.setItem(KEY_STORAGE, value);
  $('key').value = '';
  setKeyStatus();
  showError('');
  onKeyChanged();
});
$('key-forget').addEventListener('click', () => {
  sessionStorage.removeItem(KEY_STORAGE);
  setKeyStatus();
  onKeyChanged();
});

function onKeyChanged() {
  loadVoices();
  if (currentPage() === 'consents') loadConsents();
  if (currentPage() === 'health') startHealth();
}

// ---------------------------------------------------------------- pages

const PAGES = ['speech', 'consents', 'health', 'stream-api'];
const currentPage = () => (PAGES.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'speech');

function showPage() {
  const page = currentPage();
  // an error belongs to the page it happened on
  showError('');
  for (const section of document.querySelectorAll('main section')) section.hidden = section.dataset.page !== page;
  for (const link of document.querySelectorAll('nav a[data-page]'))
    link.classList.toggle('active', link.dataset.page === page);
  if (page === 'health') startHealth();
  else stopHealth();
  if (page === 'consents' && key()) loadConsents();
  if (page === 'stream-api') loadAsyncApi();
}
window.addEventListener('hashchange', showPage);

// ---------------------------------------------------------------- speech playground

const speech = {
  socket: null,
  chunks: [],
  bytes: 0,
  // mp3 through MediaSource
  mediaSource: null,
  sourceBuffer: null,
  pending: [],
  // pcm through Web Audio
  audioContext: null,
  playAt: 0,
  carry: null,
  sampleRate: 24000,
};

async function loadVoices() {
  const select = $('speech-voice');
  if (!key()) {
    select.replaceChildren(new Option('(paste a key to list voices)', ''));
    return;
  }
  try {
    const list = await apiJson('/v1/audio/voices');
    setKeyStatus(true);
    const options = list.data.map((voice) => new Option(`${voice.name} (${voice.id}, ${voice.provider})`, voice.id));
    select.replaceChildren(...(options.length ? options : [new Option("(no voice on this key's chain)", '')]));
    const preferred = voiceForLanguage(list.data, navigator.language);
    if (preferred) select.value = preferred.id;
  } catch (err) {
    // a key the gateway refuses must not look like a good one
    if (err instanceof ApiError && err.status === 401) setKeyStatus(false);
    select.replaceChildren(new Option('(voices unavailable)', ''));
    showError(`Voices: ${err.message}`);
  }
}

/** The first voice speaking the browser's language (its exact tag, else its base language); null when none does. */
function voiceForLanguage(voices, language) {
  const wanted = (language || 'en-US').toLowerCase();
  const base = wanted.split('-')[0];
  const speaks = (voice, match) => (voice.languages ?? []).some((tag) => match(tag.toLowerCase()));
  return (
    voices.find((voice) => speaks(voice, (tag) => tag === wanted)) ??
    voices.find((voice) => speaks(voice, (tag) => tag.split('-')[0] === base)) ??
    null
  );
}

/** The upgrade URL: with a single-use ticket where the gateway issues them, else the key in the query. */
async function streamUrl() {
  const base = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`;
  const res = await fetch(TICKETS_PATH, { method: 'POST', headers: { Authorization: `Bearer ${key()}` } });
  if (res.ok) {
    const { ticket } = await res.json();
    return { url: `${base}${STREAM_PATH}?ticket=${encodeURIComponent(ticket)}`, auth: 'single-use ticket' };
  }
  if (res.status === 404 || res.status === 405)
    return {
      url: `${base}${STREAM_PATH}?api_key=${encodeURIComponent(key())}`,
      auth: '?api_key= (this gateway issues no tickets)',
    };
  throw new ApiError(res.status, await res.json().catch(() => null));
}

const hexToBytes = (hex) => {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.substr(i * 2, 2), 16);
  return bytes;
};

function resetSpeech(format) {
  speech.chunks = [];
  speech.bytes = 0;
  speech.pending = [];
  speech.carry = null;
  speech.sourceBuffer = null;
  speech.mediaSource = null;
  const player = $('speech-player');
  player.pause();
  player.removeAttribute('src');
  const link = $('speech-download');
  if (link.href) URL.revokeObjectURL(link.href);
  link.hidden = true;
  for (const id of [
    'speech-ttfa',
    'speech-provider',
    'speech-fallback',
    'speech-bytes',
    'speech-duration',
    'speech-auth',
  ])
    $(id).textContent = '–';
  if (format === 'mp3' && window.MediaSource && MediaSource.isTypeSupported('audio/mpeg')) {
    speech.mediaSource = new MediaSource();
    player.src = URL.createObjectURL(speech.mediaSource);
    speech.mediaSource.addEventListener(
      'sourceopen',
      () => {
        speech.sourceBuffer = speech.mediaSource.addSourceBuffer('audio/mpeg');
        speech.sourceBuffer.mode = 'sequence';
        speech.sourceBuffer.addEventListener('updateend', feedSourceBuffer);
        feedSourceBuffer();
      },
      { once: true },
    );
    player.play().catch(() => undefined);
  }
  if (format === 'pcm') {
    speech.audioContext ??= new AudioContext();
    speech.audioContext.resume().catch(() => undefined);
    speech.playAt = 0;
  }
}

function feedSourceBuffer() {
  const buffer = speech.sourceBuffer;
  if (!buffer || buffer.updating) return;
  if (speech.pending.length) buffer.appendBuffer(speech.pending.shift());
  else if (speech.ended && speech.mediaSource.readyState === 'open') speech.mediaSource.endOfStream();
}

/** 16-bit little-endian mono samples, scheduled back to back as they arrive. */
function playPcm(bytes) {
  let data = bytes;
  if (speech.carry) {
    data = new Uint8Array(bytes.length + 1);
    data[0] = speech.carry;
    data.set(bytes, 1);
    speech.carry = null;
  }
  if (data.length % 2) {
    speech.carry = data[data.length - 1];
    data = data.subarray(0, data.length - 1);
  }
  if (!data.length) return;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const samples = new Float32Array(data.length / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
  const context = speech.audioContext;
  const buffer = context.createBuffer(1, samples.length, speech.sampleRate);
  buffer.copyToChannel(samples, 0);
  const node = context.createBufferSource();
  node.buffer = buffer;
  node.connect(context.destination);
  speech.playAt = Math.max(speech.playAt, context.currentTime + 0.05);
  node.start(speech.playAt);
  speech.playAt += buffer.duration;
}

/** A WAV file around 16-bit mono pcm, so that what was heard downloads as a playable file. */
function wavOf(pcm, sampleRate) {
  const header = new DataView(new ArrayBuffer(44));
  const text = (offset, value) => [...value].forEach((c, i) => header.setUint8(offset + i, c.charCodeAt(0)));
  text(0, 'RIFF');
  header.setUint32(4, 36 + pcm.size, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  header.setUint32(16, 16, true);
  header.setUint16(20, 1, true);
  header.setUint16(22, 1, true);
  header.setUint32(24, sampleRate, true);
  header.setUint32(28, sampleRate * 2, true);
  header.setUint16(32, 2, true);
  header.setUint16(34, 16, true);
  text(36, 'data');
  header.setUint32(40, pcm.size, true);
  return new Blob([header, pcm], { type: 'audio/wav' });
}

function audioSeconds(format) {
  if (format === 'pcm') return speech.bytes / 2 / speech.sampleRate;
  const buffered = speech.sourceBuffer?.buffered;
  if (buffered?.length) return buffered.end(buffered.length - 1);
  return (speech.bytes * 8) / 128000;
}

function showReceived(format, messages) {
  $('speech-bytes').textContent = `${speech.bytes.toLocaleString('en')} bytes in ${messages} messages`;
  $('speech-bytes').dataset.bytes = String(speech.bytes);
  const seconds = audioSeconds(format);
  $('speech-duration').textContent = `${seconds.toFixed(2)} s`;
  $('speech-duration').dataset.seconds = String(seconds);
}

async function speak(event) {
  event.preventDefault();
  showError('');
  const format = $('speech-format').value;
  const text = $('speech-text').value;
  const voice = $('speech-voice').value;
  if (!key()) return showError('Paste a proxy key first.');
  if (!voice) return showError('Choose a voice.');
  speech.socket?.close();
  speech.ended = false;
  resetSpeech(format);
  const started = performance.now();
  let messages = 0;
  $('speech-status').textContent = 'connecting';
  $('speak').disabled = true;
  $('speech-stop').disabled = false;
  let target;
  try {
    target = await streamUrl();
  } catch (err) {
    $('speech-status').textContent = 'failed';
    $('speak').disabled = false;
    return showError(`Ticket: ${err.message}`);
  }
  $('speech-auth').textContent = target.auth;
  const socket = new WebSocket(target.url);
  speech.socket = socket;
  socket.addEventListener('message', ({ data }) => {
    const message = JSON.parse(data);
    switch (message.event) {
      case 'connected_success': {
        const audio_setting =
          format === 'pcm'
            ? { format: 'pcm', sample_rate: speech.sampleRate, channel: 1 }
            : { format: 'mp3', sample_rate: 32000, bitrate: 128000, channel: 1 };
        socket.send(
          JSON.stringify({
            event: 'task_start',
            model: $('speech-model').value,
            voice_setting: { voice_id: voice },
            audio_setting,
          }),
        );
        socket.send(JSON.stringify({ event: 'task_continue', text }));
        socket.send(JSON.stringify({ event: 'task_finish' }));
        $('speech-status').textContent = 'connected';
        break;
      }
      case 'task_started':
        $('speech-status').textContent = 'speaking';
        $('speech-provider').textContent = message.provider;
        $('speech-fallback').textContent = String(message.fallback_level);
        break;
      case 'task_continued': {
        const bytes = hexToBytes(message.data.audio);
        if (!speech.bytes) {
          const ms = Math.round(performance.now() - started);
          $('speech-ttfa').textContent = `${ms} ms`;
          $('speech-ttfa').dataset.ms = String(ms);
        }
        messages += 1;
        speech.bytes += bytes.length;
        speech.chunks.push(bytes);
        $('speech-provider').textContent = message.provider;
        $('speech-fallback').textContent = String(message.fallback_level);
        if (format === 'pcm') playPcm(bytes);
        else if (speech.mediaSource) {
          speech.pending.push(bytes);
          feedSourceBuffer();
        }
        showReceived(format, messages);
        break;
      }
      case 'task_finished':
        $('speech-status').textContent = 'finished';
        break;
      case 'task_failed':
        $('speech-status').textContent = 'failed';
        showError(`Stream: ${message.error.code}: ${message.error.message}`);
        break;
    }
  });
  socket.addEventListener('close', ({ code }) => {
    speech.ended = true;
    if (speech.socket === socket) speech.socket = null;
    $('speak').disabled = false;
    $('speech-stop').disabled = true;
    if ($('speech-status').textContent !== 'finished' && $('speech-status').textContent !== 'failed') {
      $('speech-status').textContent = `closed (${code})`;
      if (code !== 1000) showError(`The stream closed with ${code} before it finished.`);
    }
    feedSourceBuffer();
    if (!speech.bytes) return;
    const heard = new Blob(speech.chunks, { type: format === 'pcm' ? 'application/octet-stream' : 'audio/mpeg' });
    const file = format === 'pcm' ? wavOf(heard, speech.sampleRate) : heard;
    if (!speech.mediaSource) $('speech-player').src = URL.createObjectURL(file);
    const link = $('speech-download');
    link.href = URL.createObjectURL(file);
    link.download = format === 'pcm' ? 'speech.wav' : 'speech.mp3';
    link.hidden = false;
    showReceived(format, messages);
  });
}

$('speech-form').addEventListener('submit', speak);
$('speech-stop').addEventListener('click', () => speech.socket?.close(1000, 'stopped'));

// ---------------------------------------------------------------- consent recorder

const recorder = { media: null, parts: [], blob: null, started: 0, timer: null };

function setRecording(blob, label) {
  recorder.blob = blob;
  const preview = $('recording-preview');
  if (preview.src) URL.revokeObjectURL(preview.src);
  preview.src = URL.createObjectURL(blob);
  preview.hidden = false;
  $('consent-upload').disabled = false;
  $('record-status').textContent = label;
}

$('record-start').addEventListener('click', async () => {
  showError('');
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (err) {
    return showError(`Microphone: ${err.message}`);
  }
  const type =
    ['audio/webm;codecs=opus', 'audio/ogg;codecs=opus', 'audio/mp4'].find((t) => MediaRecorder.isTypeSupported(t)) ??
    '';
  const media = new MediaRecorder(stream, type ? { mimeType: type } : {});
  recorder.media = media;
  recorder.parts = [];
  media.addEventListener('dataavailable', ({ data }) => data.size && recorder.parts.push(data));
  media.addEventListener('stop', () => {
    clearInterval(recorder.timer);
    stream.getTracks().forEach((track) => track.stop());
    const blob = new Blob(recorder.parts, { type: media.mimeType || 'audio/webm' });
    const seconds = ((performance.now() - recorder.started) / 1000).toFixed(1);
    setRecording(blob, `recorded ${seconds} s (${blob.size.toLocaleString('en')} bytes, ${blob.type})`);
    $('record-start').disabled = false;
    $('record-stop').disabled = true;
  });
  media.start(250);
  recorder.started = performance.now();
  recorder.timer = setInterval(() => {
    $('record-status').textContent = `recording ${((performance.now() - recorder.started) / 1000).toFixed(1)} s`;
  }, 100);
  $('record-status').textContent = 'recording';
  $('record-start').disabled = true;
  $('record-stop').disabled = false;
});
$('record-stop').addEventListener('click', () => recorder.media?.state === 'recording' && recorder.media.stop());

$('consent-file').addEventListener('change', () => {
  const file = $('consent-file').files[0];
  if (file) setRecording(file, `file ${file.name} (${file.size.toLocaleString('en')} bytes)`);
});

$('consent-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  showError('');
  if (!recorder.blob) return showError('Record the phrase or choose a file first.');
  const form = new FormData();
  const extension = (recorder.blob.type.match(/audio\/(\w+)/) ?? [])[1] ?? 'bin';
  form.append('recording', recorder.blob, recorder.blob.name ?? `consent.${extension}`);
  form.append('language', $('consent-language').value);
  form.append('name', $('consent-name').value);
  $('consent-status').textContent = 'uploading';
  try {
    const consent = await apiJson('/v1/audio/voice_consents', { method: 'POST', body: form });
    $('consent-status').textContent = `uploaded ${consent.id}`;
    await loadConsents();
  } catch (err) {
    $('consent-status').textContent = 'upload failed';
    showError(`Upload: ${err.message}`);
  }
});

let consentCursor = null;

function consentRow(consent) {
  const row = document.createElement('tr');
  row.dataset.id = consent.id;
  const cells = [
    consent.name,
    consent.id,
    consent.language,
    new Date(consent.created_at * 1000).toLocaleString('en-GB'),
  ];
  for (const value of cells) row.insertCell().textContent = value;
  const actions = row.insertCell();
  const play = Object.assign(document.createElement('button'), {
    type: 'button',
    textContent: 'Play',
    className: 'consent-play',
  });
  const remove = Object.assign(document.createElement('button'), {
    type: 'button',
    textContent: 'Delete',
    className: 'consent-delete',
  });
  play.addEventListener('click', async () => {
    try {
      const blob = await (await api(`/v1/audio/voice_consents/${encodeURIComponent(consent.id)}/content`)).blob();
      const player = $('consent-player');
      if (player.src) URL.revokeObjectURL(player.src);
      player.src = URL.createObjectURL(blob);
      player.dataset.bytes = String(blob.size);
      player.dataset.consent = consent.id;
      player.hidden = false;
      await player.play().catch(() => undefined);
    } catch (err) {
      showError(`Play: ${err.message}`);
    }
  });
  remove.addEventListener('click', async () => {
    try {
      await api(`/v1/audio/voice_consents/${encodeURIComponent(consent.id)}`, { method: 'DELETE' });
      row.remove();
      $('consent-status').textContent = `deleted ${consent.id}`;
    } catch (err) {
      showError(`Delete: ${err.message}`);
    }
  });
  actions.append(play, ' ', remove);
  return row;
}

async function loadConsents(more = false) {
  if (!key()) return;
  try {
    const query = new URLSearchParams({ limit: '10', ...(more && consentCursor ? { after: consentCursor } : {}) });
    const page = await apiJson(`/v1/audio/voice_consents?${query}`);
    const rows = page.data.map(consentRow);
    if (more) $('consent-list').append(...rows);
    else $('consent-list').replaceChildren(...rows);
    consentCursor = page.last_id;
    $('consent-more').hidden = !page.has_more;
  } catch (err) {
    showError(`Consents: ${err.message}`);
  }
}
$('consent-more').addEventListener('click', () => loadConsents(true));

// ---------------------------------------------------------------- provider health and recent requests

const health = { timer: null, ticker: null, providers: [], receivedAt: 0, usageCursors: [null], usageNext: null };

function badge(status) {
  return Object.assign(document.createElement('span'), { className: `badge ${status}`, textContent: status });
}

function renderHealth() {
  const elapsed = Math.floor((performance.now() - health.receivedAt) / 1000);
  const rows = health.providers.map((p) => {
    const row = document.createElement('tr');
    row.dataset.provider = p.provider;
    row.insertCell().textContent = p.provider;
    row.insertCell().append(badge(p.status));
    row.insertCell().textContent = String(p.consecutive_failures);
    const left = p.status === 'down' ? Math.max(0, p.cooldown_remaining_secs - elapsed) : 0;
    row.insertCell().textContent = p.status === 'down' ? `${left} s` : '–';
    return row;
  });
  $('health-list').replaceChildren(...rows);
}

async function pollHealth() {
  if (!key()) return;
  try {
    const answer = await apiJson('/v1/providers/health');
    health.providers = answer.providers;
    health.receivedAt = performance.now();
    const overall = $('health-overall');
    overall.className = `badge ${answer.overall}`;
    overall.textContent = answer.overall;
    renderHealth();
    if (health.usageCursors.length === 1) await loadUsage();
  } catch (err) {
    showError(`Health: ${err.message}`);
  }
}

async function loadUsage() {
  const after = health.usageCursors[health.usageCursors.length - 1];
  const query = new URLSearchParams({ limit: String(USAGE_PAGE), ...(after ? { after } : {}) });
  const page = await apiJson(`/v1/usage?${query}`);
  const rows = page.data.map((r) => {
    const row = document.createElement('tr');
    row.dataset.request = r.request_id;
    const cells = [
      new Date(r.created_at * 1000).toLocaleTimeString('en-GB'),
      r.request_id,
      r.capability,
      r.provider ?? 'none',
      r.fallback_level ?? '–',
      `${r.latency_ms} ms`,
      r.status,
    ];
    for (const value of cells) row.insertCell().textContent = String(value);
    return row;
  });
  $('usage-list').replaceChildren(...rows);
  health.usageNext = page.has_more ? page.last_id : null;
  $('usage-older').disabled = !health.usageNext;
  $('usage-newer').disabled = health.usageCursors.length === 1;
  $('usage-page').textContent = `page ${health.usageCursors.length}${page.data.length ? '' : ' (no requests yet)'}`;
}

$('usage-older').addEventListener('click', () => {
  if (!health.usageNext) return;
  health.usageCursors.push(health.usageNext);
  loadUsage().catch((err) => showError(`Usage: ${err.message}`));
});
$('usage-newer').addEventListener('click', () => {
  if (health.usageCursors.length > 1) health.usageCursors.pop();
  loadUsage().catch((err) => showError(`Usage: ${err.message}`));
});

function startHealth() {
  stopHealth();
  if (!key()) return;
  pollHealth();
  health.timer = setInterval(pollHealth, HEALTH_POLL_MS);
  health.ticker = setInterval(renderHealth, 250);
}
function stopHealth() {
  clearInterval(health.timer);
  clearInterval(health.ticker);
  health.timer = health.ticker = null;
}

// ---------------------------------------------------------------- the AsyncAPI document, rendered

const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

/** The little Markdown the document uses: paragraphs, `code`, **bold** and [links](/same-origin). */
function markdown(text) {
  return String(text)
    .split(/\n\n+/)
    .map((paragraph) => {
      const html = escapeHtml(paragraph)
        .replace(/`([^`]+)`/g, '<code>$1</code>')
        .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
        .replace(/\[([^\]]+)\]\((\/[^)\s]*)\)/g, '<a href="$2">$1</a>');
      return `<p>${html}</p>`;
    })
    .join('');
}

function resolve(document, schema) {
  let current = schema;
  for (let depth = 0; current?.$ref && depth < 10; depth++)
    current = current.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node, part) => node?.[part], document);
  return current ?? {};
}

function constraints(schema) {
  const parts = [];
  if (schema.const !== undefined) parts.push(`= ${JSON.stringify(schema.const)}`);
  if (schema.enum) parts.push(`one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  for (const [name, label] of [
    ['minimum', '≥'],
    ['exclusiveMinimum', '>'],
    ['maximum', '≤'],
    ['exclusiveMaximum', '<'],
    ['minLength', 'length ≥'],
    ['maxLength', 'length ≤'],
  ]) {
    if (schema[name] !== undefined) parts.push(`${label} ${schema[name]}`);
  }
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join('; ');
}

/** One row per field, nested objects as `parent.child`. */
function fieldRows(document, schema, prefix = '', depth = 0) {
  const resolved = resolve(document, schema);
  const required = new Set(resolved.required ?? []);
  return Object.entries(resolved.properties ?? {}).flatMap(([name, property]) => {
    const field = resolve(document, property);
    const type = field.type
      ? [].concat(field.type).join(' | ')
      : field.const !== undefined
        ? typeof field.const
        : 'object';
    const row =
      `<tr><td><code>${escapeHtml(prefix + name)}</code></td><td>${escapeHtml(type)}</td><td>${required.has(name) ? 'yes' : ''}</td>` +
      `<td>${markdown(field.description ?? '').replace(/<\/?p>/g, '')}${constraints(field) ? ` <span class="hint">(${escapeHtml(constraints(field))})</span>` : ''}</td></tr>`;
    const nested = field.properties && depth < 3 ? fieldRows(document, field, `${prefix}${name}.`, depth + 1) : [];
    return [row, ...nested];
  });
}

let asyncApiLoaded = false;
async function loadAsyncApi() {
  if (asyncApiLoaded) return;
  const target = $('asyncapi');
  const res = await fetch('/asyncapi.json').catch(() => null);
  if (!res?.ok) {
    target.innerHTML = '<p>The documents are turned off on this server (<code>SVC_DOCS=false</code>).</p>';
    return;
  }
  const doc = await res.json();
  asyncApiLoaded = true;
  const channels = Object.values(doc.channels)
    .map((c) => `<li><code>${escapeHtml(c.address)}</code>: ${markdown(c.description).replace(/<\/?p>/g, '')}</li>`)
    .join('');
  const security = Object.values(doc.components.securitySchemes)
    .map(
      (s) =>
        `<li><strong>${escapeHtml(s.type === 'http' ? 'Authorization: Bearer' : `?${s.name}=`)}</strong>: ${markdown(s.description).replace(/<\/?p>/g, '')}</li>`,
    )
    .join('');
  const messages = Object.values(doc.components.messages)
    .map((m) => {
      const example = m.examples?.[0]?.payload;
      return (
        `<div class="message" id="message-${escapeHtml(m.name)}"><h4><code>${escapeHtml(m.name)}</code> <span class="direction">${escapeHtml(m.title.replace(/^\S+ /, ''))}</span> — ${escapeHtml(m.summary)}</h4>` +
        `${markdown(m.description)}<table><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Meaning</th></tr></thead><tbody>${fieldRows(doc, m.payload).join('')}</tbody></table>` +
        (example ? `<pre>${escapeHtml(JSON.stringify(example))}</pre>` : '') +
        '</div>'
      );
    })
    .join('');
  target.innerHTML =
    `<h3>${escapeHtml(doc.info.title)} <span class="hint">AsyncAPI ${escapeHtml(doc.asyncapi)}, version ${escapeHtml(doc.info.version)}</span></h3>` +
    `${markdown(doc.info.description)}<h3>Paths</h3><ul>${channels}</ul><h3>Authentication (one of)</h3><ul>${security}</ul><h3>Messages</h3>${messages}`;
}

// ---------------------------------------------------------------- start

setKeyStatus();
showPage();
loadVoices();
