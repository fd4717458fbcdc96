# BEGIN ZYLOS MANAGED hooks hash=8cb53e8a30d5
export A=7
# END ZYLOS MANAGED hooks
