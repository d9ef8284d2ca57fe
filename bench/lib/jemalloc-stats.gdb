# jemalloc's counters of a running process (one preloaded with libjemalloc.so.2), read through gdb:
#   gdb -p <pid> -batch -nx -iex 'set auto-load off' -x bench/lib/jemalloc-stats.gdb
# Takes ~2 s (the process pauses meanwhile). Bytes, except pdirty/pmuzzy (4 KiB pages, all arenas).
set pagination off
set $e = (unsigned long*) malloc(8)
set *$e = 1
set $sz = (unsigned long*) malloc(8)
set *$sz = 8
call (int) mallctl("epoch", $e, $sz, $e, 8)
set $v = (unsigned long*) malloc(8)
set *$sz = 8
call (int) mallctl("stats.allocated", $v, $sz, 0, 0)
printf "allocated %lu\n", *$v
set *$sz = 8
call (int) mallctl("stats.active", $v, $sz, 0, 0)
printf "active %lu\n", *$v
set *$sz = 8
call (int) mallctl("stats.metadata", $v, $sz, 0, 0)
printf "metadata %lu\n", *$v
set *$sz = 8
call (int) mallctl("stats.resident", $v, $sz, 0, 0)
printf "resident %lu\n", *$v
set *$sz = 8
call (int) mallctl("stats.mapped", $v, $sz, 0, 0)
printf "mapped %lu\n", *$v
set *$sz = 8
call (int) mallctl("stats.retained", $v, $sz, 0, 0)
printf "retained %lu\n", *$v
set *$sz = 8
call (int) mallctl("stats.arenas.4096.pdirty", $v, $sz, 0, 0)
printf "pdirty %lu\n", *$v
set *$sz = 8
call (int) mallctl("stats.arenas.4096.pmuzzy", $v, $sz, 0, 0)
printf "pmuzzy %lu\n", *$v
detach
