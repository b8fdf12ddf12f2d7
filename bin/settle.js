#!/usr/bin/env node
// `npx settle …`: runs the TypeScript sources through tsx, so there is no build step to forget.
require('tsx/cjs');
require('../src/cli/main.ts');
