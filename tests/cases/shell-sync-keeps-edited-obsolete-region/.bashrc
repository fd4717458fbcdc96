# BEGIN ZYLOS MANAGED old hash=8cb53e8a30d5
export A=1
export MINE=1
# END ZYLOS MANAGED old
