/**
 * The Temporal UI as an operator sees it: a run's page opened in headless Chromium (puppeteer-core,
 * driving the machine's own Chromium), its visible text read and a screenshot taken. Chromium is
 * SETTLE_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH; on a machine
 * without one, root installs Debian's chromium (apt-get), as the compose check installs docker.io.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const CANDIDATES = ['chromium', 'chromium-browser', 'google-chrome'];

async function onPath(name: string): Promise<string | undefined> {
  const found = await exec('sh', ['-c', `command -v ${name}`]).catch(() => undefined);
  return found?.stdout.trim() || undefined;
}

/** The Chromium to drive; installs Debian's package when none is found and this process is root. */
export async function findChromium(log: (line: string) => void): Promise<string> {
  if (process.env.SETTLE_CHROMIUM) return process.env.SETTLE_CHROMIUM;
  for (const name of CANDIDATES) {
    const path = await onPath(name);
    if (path) return path;
  }
  if (process.getuid?.() !== 0 || !(await onPath('apt-get')))
    throw new Error(`no Chromium (${CANDIDATES.join(', ')}) on PATH; set SETTLE_CHROMIUM or install one`);
  log('no Chromium: installing chromium (apt-get)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await exec('apt-get', ['update'], { env, timeout: 600_000 });
  await exec('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { env, timeout: 900_000 });
  const path = await onPath('chromium');
  if (!path) throw new Error('apt-get installed chromium, but it is not on PATH');
  return path;
}

export type PageView = {
  /** The page's visible text once `expected` appeared in it (or when the wait ended). */
  text: string;
  /** Whether `expected` appeared before the bound. */
  appeared: boolean;
};

/**
 * Opens `url`, waits for `expected` in the page's visible text (a bound on a hang, not a pace), saves
 * a screenshot to `screenshot`, and answers what was shown.
 */
export async function viewPage(options: {
  chromium: string;
  url: string;
  expected: string;
  screenshot: string;
  timeoutMs?: number;
  /** The window's size in CSS pixels: 1400 × 1000 unless given. */
  viewport?: { width: number; height: number };
}): Promise<PageView> {
  const { default: puppeteer } = await import('puppeteer-core');
  const browser = await puppeteer.launch({
    executablePath: options.chromium,
    headless: true,
    // A root process in a container or VM has no user namespace sandbox to give Chromium.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport(options.viewport ?? { width: 1400, height: 1000 });
    const timeout = options.timeoutMs ?? 120_000;
    await page.goto(options.url, { waitUntil: 'networkidle2', timeout });
    const appeared = await page
      .waitForFunction(`document.body.innerText.includes(${JSON.stringify(options.expected)})`, { timeout })
      .then(
        () => true,
        () => false,
      );
    const text = (await page.evaluate('document.body.innerText')) as string;
    await page.screenshot({ path: options.screenshot as `${string}.png` });
    return { text, appeared };
  } finally {
    await browser.close();
  }
}

/**
 * The Temporal UI server at `url` serves its page and its API for `namespace`; given `workflowIds`,
 * its workflow list holds at least one of them (the API reaches the frontend and lists what runs).
 */
export async function uiServes(url: string, namespace: string, workflowIds?: Set<string>) {
  const failures: string[] = [];
  const page = await fetch(url);
  if (page.status !== 200 || !/<html/i.test(await page.text()))
    failures.push(`GET / answered ${page.status}`);
  const path = `/api/v1/namespaces/${namespace}${workflowIds ? '/workflows?query=' : ''}`;
  const api = await fetch(`${url}${path}`);
  const body = await api.text();
  const answered = `GET / ${page.status}; GET ${path} ${api.status}`;
  if (api.status !== 200 || (!workflowIds && !body.includes(namespace)))
    failures.push(`GET ${path} answered ${api.status}: ${body.slice(0, 300)}`);
  if (!workflowIds) return { failures, detail: answered };
  type Listed = { executions?: { execution?: { workflowId?: string } }[] };
  let executions: NonNullable<Listed['executions']> = [];
  try {
    executions = (JSON.parse(body) as Listed).executions ?? [];
  } catch {
    failures.push(`the UI's workflow list is not JSON: ${body.slice(0, 200)}`);
  }
  const ours = executions.filter((e) => workflowIds.has(e.execution?.workflowId ?? '')).length;
  if (!ours) failures.push(`the UI lists ${executions.length} workflows, none of this run's payments`);
  return { failures, detail: `${answered}, ${executions.length} listed, ${ours} of this run's` };
}
