/**
 * A docs page as an agent outside the repository reads it (the console's /llms-full.txt, the MCP
 * endpoint's resources and search passages): with this deployment's addresses.
 */

/** A deployment's public addresses: the console, the REST gateway and the MCP endpoint. */
export interface DocUrls {
  console: string;
  base: string;
  mcp: string;
}

/**
 * The addresses the docs use for a local installation (the default ports), and what each becomes in
 * a deployment's /llms-full.txt: an agent reading it must be given the addresses that work for it.
 */
function localAddresses(u: DocUrls): Array<[string, string]> {
  return [
    ['http://127.0.0.1:8081/mcp', u.mcp],
    ['http://localhost:8081/mcp', u.mcp],
    ['http://localhost:8080', u.base],
    ['http://127.0.0.1:8080', u.base],
    ['http://localhost:8082', u.console],
    ['http://127.0.0.1:8082', u.console],
  ];
}

/**
 * One docs page as it reads in /llms-full.txt: links between pages become the console's absolute
 * URLs (`errors.md#x` → `<console>/docs/errors.md#x`), links into the repository's code become the
 * path they name (the console does not serve the code), and the local default addresses the
 * deployment's.
 */
export function pageForAgents(markdown: string, u: DocUrls): string {
  let text = markdown.replace(/\[([^\]]*)\]\(([^)\s]+)\)/g, (whole, label: string, href: string) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#') || href.startsWith('/')) return whole;
    if (href.startsWith('../')) return `${label} (\`${href.replace(/^(\.\.\/)+/, '')}\` in the repository)`;
    const [path, frag] = href.split('#', 2) as [string, string | undefined];
    const target = path === 'README.md' ? `${u.console}/docs/` : `${u.console}/docs/${path}`;
    return `[${label}](${target}${frag ? `#${frag}` : ''})`;
  });
  for (const [local, deployed] of localAddresses(u)) text = text.replaceAll(local, deployed);
  return text;
}

