import { set } from "demarcate";
const report = await set(`${process.env.HOME}/.bashrc`, { owner: "ZYLOS", name: "hooks", content: 'export PATH="$HOME/.zylos/bin:$PATH"' });
console.log(report.files[0].changed ? "installed" : "already there");
