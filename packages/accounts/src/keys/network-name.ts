// Network names: the first DNS label of a Host (`serve --network <name>=…`), as key records list
// them (KeyRecord.networks) and the per-network split of a key's credits labels them.

/** A DNS label: network names appear as the first label of a Host, in metrics and in key records. */
export const NETWORK_NAME_RE = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

export function networkNameProblem(name: string): string | undefined {
  if (!NETWORK_NAME_RE.test(name)) {
    return `network name "${name.slice(0, 64)}": expected 1-32 lowercase letters, digits or inner hyphens (it is the first label of the Host)`;
  }
  return undefined;
}
