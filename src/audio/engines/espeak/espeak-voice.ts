/** The engine's default voice; kept apart from the engine so the gateway can name it without loading the engine. */
export const ESPEAK_DEFAULT_VOICE = 'en-us';
