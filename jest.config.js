// Type checking is `nest build`'s job (npm test builds first); jest only transpiles, file by file.
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
};

module.exports = {
  // a hung hook or test fails after a minute instead of holding the run (jest reads this only at the top level)
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/src'],
      testRegex: '\\.spec\\.ts$',
      transform,
      setupFiles: ['reflect-metadata'],
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/test'],
      testRegex: '\\.e2e-spec\\.ts$',
      transform,
      setupFiles: ['reflect-metadata'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
