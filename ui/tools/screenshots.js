#!/usr/bin/env node
'use strict';
// Screenshots of every screen for docs/figures, taken in Debian's Chromium:
//   AWA_UI_URL=http://127.0.0.1:8080 AWA_UI_ADMIN_PASSWORD=... node tools/screenshots.js ../docs/figures
// Logs in when AWA_UI_ADMIN_PASSWORD is set (the admin's view), else shows the read-only view.
const path = require('path');
const puppeteer = require('puppeteer-core');

const SCREENS = [
  ['overview', '/'],
  ['queues', '/queues'],
  ['jobs', '/jobs?queue=reports&count=1&bulk_action=set_priority&to_priority=1'],
  ['job', null],
  ['dlq', '/dlq'],
  ['periodic', '/periodic'],
  ['storage', '/storage'],
];

async function main() {
  const base = process.env.AWA_UI_URL || 'http://127.0.0.1:8080';
  const out = process.argv[2] || '.';
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    if (process.env.AWA_UI_ADMIN_PASSWORD) {
      await page.goto(`${base}/login`);
      await page.type('input[name=password]', process.env.AWA_UI_ADMIN_PASSWORD);
      await Promise.all([page.waitForNavigation(), page.click('#login button')]);
    }
    for (const [name, route] of SCREENS) {
      let url = route;
      if (!url) {
        await page.goto(`${base}/dlq`);
        const href = await page.$eval('#dlq tbody a', (a) => a.getAttribute('href')).catch(() => '/jobs/1');
        url = href;
      }
      await page.goto(base + url, { waitUntil: 'networkidle0' });
      if (name === 'overview') await page.waitForFunction(() => Number(document.getElementById('refreshed').getAttribute('data-refreshes') || 0) >= 1);
      const file = path.join(out, `ui-${name}.png`);
      await page.screenshot({ path: file, fullPage: name === 'job' });
      console.log(file);
    }
  } finally {
    await browser.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
