// Compiled with `tsc --noEmit` in CI: the declarations accept correct use and reject wrong use.
import { set, sync, list, check, remove, apply, findBinary, DemarcateError, type Report } from "demarcate";

export async function usage(): Promise<number> {
  const r: Report = await set("/tmp/x", { owner: "Z", name: "n", content: "x", dryRun: true });
  const changed: boolean = r.files[0].changed;
  const diff: string | undefined = r.files[0].diff;
  const code: 0 | 1 = r.exitCode;
  const action: string = (await sync(["/a", "/b"], { template: "t.sh", onDrift: "merge" })).files[0].regions[0].action;
  await remove("/tmp/x", { owner: "Z", name: "n", check: true });
  await list("/tmp/x", { format: "shell" });
  await apply("release.toml", { respectRemovals: true });
  const bin: string | null = findBinary();
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
  return [changed, diff, code, action, bin].length;
}
