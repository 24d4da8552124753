import 'reflect-metadata';
import { Logger } from '@nestjs/common';

// a unit test checks what is logged by spying on the logger; the lines themselves are not the run's output, which
// shows only what failed (npm test prints no warning that is not a failure)
Logger.overrideLogger(false);
