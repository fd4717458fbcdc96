// Compiled with `tsc --noEmit` in CI: the declarations accept correct use and reject wrong use.
import { set, sync, list, check, remove, apply, uninstall, findBinary, DemarcateError, type Report, type EntryReport } from "demarcate";

export async function usage(): Promise<number> {
  const r: Report = await set("/tmp/x", { owner: "Z", name: "n", content: "x", dryRun: true });
  const changed: boolean = r.files[0].changed;
  const diff: string | undefined = r.files[0].diff;
  const code: 0 | 1 = r.exitCode;
  const action: string = (await sync(["/a", "/b"], { template: "t.sh", owner: "ZYLOS", onDrift: "merge" })).files[0].regions[0].action;
  await remove("/tmp/x", { owner: "Z", name: "n", check: true });
  await list("/tmp/x", { format: "shell" });
  await apply("release.toml", { respectRemovals: true });
  const bin: string | null = findBinary();
  const json = await sync("/tmp/settings.json", {
    template: "t.json",
    owner: "Z",
    keys: ["/hooks/*=matcher", "/hooks/*/*/hooks=command:path"],
    seeds: "/model",
    pruneAdopted: true,
    format: "json",
  });
  const entries: EntryReport[] | undefined = json.files[0].entries;
  const key: string | undefined = entries?.[0].key;
  await remove("/tmp/settings.json", { owner: "Z", keys: "/permissions/allow=.", dryRun: true });
  const gone: 0 | 1 = (await uninstall("Z", { dryRun: true, check: true })).exitCode;
  await set("/tmp/x", { content: "x", adopt: ["export A=1", "re:^export B="], comment: "//", blankBefore: true });
  await list(["/tmp/settings.json"], { keys: ["/permissions/allow=."] });
  // @ts-expect-error apply takes no format: formats are per entry in the manifest
  await apply("release.toml", { format: "shell" });
  // @ts-expect-error list writes nothing, so it takes no dryRun
  await list("/tmp/x", { dryRun: true });
  // @ts-expect-error remove inserts nothing, so it takes no at
  await remove("/tmp/x", { name: "n", at: "start" });
  // @ts-expect-error uninstall needs the owner
  await uninstall();
  // @ts-expect-error uninstall takes no onDrift
  await uninstall("Z", { onDrift: "overwrite" });
  // @ts-expect-error content is required
  await set("/tmp/x", { owner: "Z", name: "n" });
  // @ts-expect-error onDrift takes only the four policies
  await sync("/tmp/x", { template: "t", onDrift: "sometimes" });
  // @ts-expect-error sync needs a template
  await sync("/tmp/x", {});
  try {
    await check(["/tmp/x"]);
  } catch (e) {
    if (e instanceof DemarcateError) {
      const exit: number | null = e.exitCode;
      const msg: string = e.message;
      return exit ?? msg.length;
    }
  }
  return [changed, diff, code, action, bin, key, gone].length;
}
