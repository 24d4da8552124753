// Type checking is `nest build`'s job (npm test builds first); jest only transpiles, file by file.
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
};

module.exports = {
  // a hung hook or test fails after a minute instead of holding the run (jest reads this only at the top level)
  testTimeout: 60000,
  // test files run in worker processes (on a 2-core machine one), each replaced between files once its heap passes
  // 1 GB. Run in the jest process itself (jest's choice for one worker without this), that process grew past 4 GB
  // RSS over the suites, and its collections' pauses fell on the e2e tests that time an answer (a /healthz while
  // speech runs, a request line's clock)
  workerIdleMemoryLimit: '1GB',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      rootDir: __dirname,
      roots: ['<rootDir>/src'],
      testRegex: '\\.spec\\.ts$',
      transform,
      setupFiles: ['<rootDir>/test/support/unit-setup.ts'],
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
