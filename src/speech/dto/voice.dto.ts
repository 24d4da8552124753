export class VoiceDto {
  /** The id to send as `voice_setting.voice_id`. */
  id!: string;
  object!: 'audio.voice';
  name!: string;
  /** The provider that speaks with this voice. */
  provider!: string;
  languages!: string[];
  /** `builtin` (custom voices come with cloning and design). */
  type!: 'builtin';
}

export class VoiceListDto {
  object!: 'list';
  data!: VoiceDto[];
}
