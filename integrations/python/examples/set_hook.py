import demarcate, os
report = demarcate.set(os.path.expanduser("~/.bashrc"), owner="ZYLOS", name="hooks", content='export PATH="$HOME/.zylos/bin:$PATH"')
print("installed" if report["files"][0]["changed"] else "already there")
