# Sourced, not run: which Java runs Vivarium and with which JVM options. The one copy of this
# logic: bin/vivarium (the distribution) and ./vivarium (the source checkout, which sources it from
# runtime-assembly/src/main/dist/bin/) both use it, and .ci/run asks ./vivarium jdk.
#
#   find_java [jdk]    print the Java home to use: $JAVA_HOME if it is 21 or newer, else java on
#                      PATH if it is, else the newest under /usr/lib/jvm ("jdk": javac needed too)
#   java_major HOME    the feature version (17, 21, 25...) of the Java installation at HOME, or 0
#   daemon_java_opts HOME DIST  fill the array daemon_opts with the options the daemon starts with

min_java=21

java_major() {
  local jhome="$1" v=""
  [[ -x "$jhome/bin/java" ]] || { echo 0; return; }
  [[ -f "$jhome/release" ]] && v="$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$jhome/release")"
  if [[ -z "$v" ]]; then
    v="$("$jhome/bin/java" -XshowSettings:properties -version 2>&1 \
          | sed -n 's/^ *java\.specification\.version = //p' | head -n1)"
  fi
  v="${v#1.}"; v="${v%%[!0-9]*}"
  echo "${v:-0}"
}

# Java home $1 is recent enough, and has javac if $2 is "jdk".
java_ok() {
  [[ -n "$1" && -x "$1/bin/java" ]] || return 1
  [[ "${2:-}" != jdk || -x "$1/bin/javac" ]] || return 1
  (( $(java_major "$1") >= min_java ))
}

find_java() {
  local need="${1:-}" j h best="" best_v=0 v
  if [[ -n "${JAVA_HOME:-}" ]] && java_ok "$JAVA_HOME" "$need"; then
    echo "$JAVA_HOME"; return 0
  fi
  if j="$(command -v java 2>/dev/null)"; then
    h="$(dirname "$(dirname "$(readlink -f "$j")")")"
    if java_ok "$h" "$need"; then echo "$h"; return 0; fi
  fi
  for j in /usr/lib/jvm/*/bin/java; do
    [[ -x "$j" ]] || continue
    h="$(dirname "$(dirname "$(readlink -f "$j")")")"
    java_ok "$h" "$need" || continue
    v="$(java_major "$h")"
    if (( v > best_v )); then best="$h"; best_v="$v"; fi
  done
  [[ -n "$best" ]] && { echo "$best"; return 0; }
  echo "Vivarium needs a JDK $min_java or newer; set JAVA_HOME or install one, e.g. Temurin $min_java+" >&2
  return 1
}

# Options before $VIVARIUM_JAVA_OPTS (which can override them):
# - Java 24+ warns when the Felix framework uses sun.misc.Unsafe; allow it quietly.
# - The heap a burst grew is given back once the daemon is idle: G1 starts a collection after 10 s
#   without one, and shrinks the heap to at most 30% free (the default keeps 70% free) — an idle
#   daemon after 1,000 sandboxes held 395 MiB resident, twice what it holds after its start. It never
#   shrinks below the initial heap, which the JVM sizes at 1/64 of the host's memory (384 MiB on a
#   24 GiB host, all of it touched by the first thousand requests): -Xms32m lets it go back down.
# - A class-data sharing archive of the launcher's class path (Felix, Jackson, the launcher and the
#   JDK classes they use), DIST/daemon-STAMP.jsa, written when the first daemon exits and mapped by
#   the next ones: it saves class loading at every start (docs/benchmarks.md, cold start). The JVM
#   checks it against the jars but does not rewrite one they no longer match (Temurin 25: "shared
#   class paths mismatch", and it runs without it for good), so its name carries a stamp of the jars
#   of DIST/lib (their names, sizes and times, archive_for): a rebuild changes the name, and the
#   archives of other stamps are removed, also one a JVM started before the rebuild wrote after it.
#   VIVARIUM_CDS=off turns it off; skipped where DIST is not writable.
# The command line (sandbox, snapshot, vm, plugins, features) is one short call that a person waits
# for: the JIT's first tier only, the serial collector, and a class-data archive of its own,
# DIST/cli-STAMP.jsa (the Java client, Jackson and the JDK's HTTP client load in ~0.5 s of a
# 0.8 s run without it; docs/benchmarks.md, the command line against curl). Same rules as serve's.

# Prints the class-data archive named $2 of the distribution $1 for its jars as they are now,
# after removing $2's archives of other jars (and those of the names before the stamp).
archive_for() {
  local dist="$1" name="$2" stamp f
  stamp="$(cd "$dist/lib" && stat -c '%n %s %Y' -- *.jar 2>/dev/null | cksum | cut -d' ' -f1)"
  for f in "$dist/$name"-*.jsa "$dist/vivarium.jsa" "$dist/vivarium-cli.jsa"; do
    if [[ -e "$f" && "$f" != "$dist/$name-$stamp.jsa" ]]; then rm -f "$f"; fi
  done
  echo "$dist/$name-$stamp.jsa"
}

cli_java_opts() {
  local jhome="$1" dist="$2" v
  v="$(java_major "$jhome")"
  daemon_opts=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
  if (( v >= 19 )) && [[ "${VIVARIUM_CDS:-on}" != off && -w "$dist" ]]; then
    daemon_opts+=(-XX:+AutoCreateSharedArchive "-XX:SharedArchiveFile=$(archive_for "$dist" cli)" -Xlog:cds=off -Xlog:cds+dynamic=off)
  fi
  return 0
}

daemon_java_opts() {
  local jhome="$1" dist="$2" v
  v="$(java_major "$jhome")"
  daemon_opts=()
  (( v >= 24 )) && daemon_opts+=(--sun-misc-unsafe-memory-access=allow)
  daemon_opts+=(-Xms32m -XX:TrimNativeHeapInterval=5000 -XX:G1PeriodicGCInterval=10000 -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30)
  if (( v >= 19 )) && [[ "${VIVARIUM_CDS:-on}" != off && -w "$dist" ]]; then
    daemon_opts+=(-XX:+AutoCreateSharedArchive "-XX:SharedArchiveFile=$(archive_for "$dist" daemon)" -Xlog:cds=off -Xlog:cds+dynamic=off)
  fi
  return 0
}
