import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { loadEsm } from '../../../common/esm';

/** The parts of the ESM-only `espeak-ng` package (the espeak-ng 1.52 CLI built with Emscripten) used here. */
interface EspeakFactory {
  default(options: EmscriptenOptions): Promise<EspeakModule>;
}
interface EmscriptenOptions {
  noInitialRun: boolean;
  print(line: string): void;
  printErr(line: string): void;
  instantiateWasm(imports: object, done: (instance: WasmInstance) => void): object;
}
interface EspeakModule {
  _main(argc: number, argv: number): number;
  HEAPU8: Uint8Array;
  FS: {
    readFile(path: string): Uint8Array;
    unlink(path: string): void;
    analyzePath(path: string): { exists: boolean };
    /** Open file descriptions by fd (holes are null). */
    streams: ({ fd: number } | null | undefined)[];
    close(stream: { fd: number }): void;
  };
}
/** Node's WebAssembly global, typed locally: this project's `lib` has no DOM/WebAssembly declarations. */
interface WasmApi {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: object): Promise<WasmInstance>;
}
type WasmModule = object & { readonly __wasmModule?: never };
interface WasmInstance {
  exports: object;
}
const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Raw exports of the WebAssembly instance (the Module object hides malloc and the stack helpers). */
interface EspeakExports {
  malloc(bytes: number): number;
  stackSave(): number;
  stackRestore(pointer: number): void;
}

/** What one run of the espeak-ng command line left behind. */
export interface EspeakRun {
  /** main()'s return value, or the status it passed to exit(). */
  status: number;
  stdout: string[];
  stderr: string[];
  /** Contents of `outputPath` if the run wrote it. */
  output: Uint8Array | null;
}

let compiled: Promise<WasmModule> | null = null;

function compileWasm(): Promise<WasmModule> {
  compiled ??= readFile(join(dirname(require.resolve('espeak-ng')), 'espeak-ng.wasm'))
    .then((bytes) => wasmApi.compile(bytes))
    .catch((error: unknown) => {
      compiled = null; // a later start may succeed (e.g. a transient read error)
      throw error;
    });
  return compiled;
}

/** One warm instance whose main() runs per request; memory is reset before each run, so each acts as a fresh `espeak-ng` process. */
export class EspeakRuntime {
  private broken = false;
  private stdout: string[] = [];
  private stderr: string[] = [];
  /** Linear memory right after start-up, before any main(). */
  private readonly pristine: Uint8Array;
  /** Descriptors open at start-up (stdin/stdout/stderr); anything else left open by a run is closed. */
  private readonly baseStreams: number;

  private constructor(
    private readonly module: EspeakModule,
    private readonly exports: EspeakExports,
  ) {
    this.pristine = module.HEAPU8.slice();
    this.baseStreams = module.FS.streams.length;
  }

  static async start(): Promise<EspeakRuntime> {
    const [factory, wasm] = await Promise.all([loadEsm<EspeakFactory>('espeak-ng'), compileWasm()]);
    let exports: EspeakExports | null = null;
    const sink: { out: (line: string) => void; err: (line: string) => void } = {
      out: () => undefined,
      err: () => undefined,
    };
    let failInstantiation: (error: unknown) => void = () => undefined;
    // Emscripten waits forever if instantiateWasm never calls back, so a failure must win a race instead
    const instantiationFailed = new Promise<never>((_resolve, reject) => (failInstantiation = reject));
    const started = factory.default({
      noInitialRun: true,
      print: (line) => sink.out(line),
      printErr: (line) => sink.err(line),
      instantiateWasm(imports, done) {
        // the module is compiled once per process; each instance only instantiates it
        wasmApi.instantiate(wasm, imports).then((instance) => {
          exports = instance.exports as EspeakExports;
          done(instance);
        }, failInstantiation);
        return {};
      },
    });
    const module = await Promise.race([started, instantiationFailed]);
    if (!exports) throw new Error('espeak-ng started without exposing its WebAssembly exports');
    const runtime = new EspeakRuntime(module, exports);
    sink.out = (line) => runtime.stdout.push(line);
    sink.err = (line) => runtime.stderr.push(line);
    return runtime;
  }

  /** False once a run trapped (abort, out of memory): the JavaScript side of the instance may be inconsistent. */
  get usable(): boolean {
    return !this.broken;
  }

  /** Runs `espeak-ng <args>` synchronously; collects what it printed and, if asked, the file it wrote. */
  run(args: string[], options: { outputPath?: string } = {}): EspeakRun {
    if (this.broken) throw new Error('espeak-ng instance is no longer usable');
    this.restoreMemory();
    const argv = ['espeak-ng', ...args];
    const pointers = argv.map((arg) => this.copyString(arg));
    const argvPointer = this.exports.malloc(4 * (argv.length + 1));
    const heap32 = new Uint32Array(this.module.HEAPU8.buffer, argvPointer, argv.length + 1);
    heap32.set(pointers);
    heap32[argv.length] = 0;

    this.stdout = [];
    this.stderr = [];
    const stack = this.exports.stackSave();
    // the Emscripten shell writes exit() statuses into process.exitCode; never let espeak decide ours
    const exitCode = process.exitCode;
    let status: number;
    try {
      status = this.module._main(argv.length, argvPointer);
    } catch (error) {
      const exited = exitStatus(error);
      if (exited === null) {
        this.broken = true;
        throw error;
      }
      status = exited;
      // exit() unwound past main without popping its frame; the stack pointer is a wasm global, not memory
      this.exports.stackRestore(stack);
    } finally {
      process.exitCode = exitCode;
    }
    this.closeLeftoverStreams();

    let output: Uint8Array | null = null;
    if (options.outputPath && this.module.FS.analyzePath(options.outputPath).exists) {
      output = this.module.FS.readFile(options.outputPath);
      this.module.FS.unlink(options.outputPath);
    }
    return { status, stdout: this.stdout, stderr: this.stderr, output };
  }

  // C statics survive main() (getopt's optind would make later runs ignore their options) and nothing resets them
  private restoreMemory(): void {
    const heap = this.module.HEAPU8;
    heap.set(this.pristine);
    // memory that grew during a run must read as fresh (zeroed) again, as malloc assumes of new pages
    if (heap.length > this.pristine.length) heap.fill(0, this.pristine.length);
  }

  /** A run cut short by exit() leaves files open on the JavaScript side, which memory restore cannot see. */
  private closeLeftoverStreams(): void {
    const streams = this.module.FS.streams;
    for (let fd = this.baseStreams; fd < streams.length; fd++) {
      const stream = streams[fd];
      if (stream) this.module.FS.close(stream);
    }
  }

  private copyString(value: string): number {
    const bytes = Buffer.from(`${value.replace(/\0/g, '')}\0`, 'utf8');
    const pointer = this.exports.malloc(bytes.length);
    this.module.HEAPU8.set(bytes, pointer);
    return pointer;
  }
}

/** exit() surfaces as a thrown Emscripten ExitStatus (not an Error subclass); null for anything else. */
function exitStatus(error: unknown): number | null {
  const thrown = error as { name?: unknown; status?: unknown } | null;
  return typeof thrown === 'object' &&
    thrown !== null &&
    thrown.name === 'ExitStatus' &&
    typeof thrown.status === 'number'
    ? thrown.status
    : null;
}
