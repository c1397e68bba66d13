package io.vivarium.fingerprint.sha256.internal;

import java.util.List;
import java.util.stream.Stream;

/**
 * The guest command that lists regular files with their SHA-256. A fixed POSIX sh script that runs
 * with busybox as well as with GNU coreutils and findutils; the directories are its positional
 * parameters, so the shell never parses them. Each file is hashed from stdin, so sha256sum never
 * sees (and never escapes) its name. Relative directories are refused rather than risk find taking
 * one for an expression such as {@code -delete}.
 */
final class Sha256Listing {

    static final String SCRIPT = """
            status=0
            for d do
              case $d in
              /*) find "$d" -xdev -type f -exec sh -c '
                    status=0
                    for f do
                      if [ -r "$f" ]; then
                        h=$(sha256sum < "$f") && printf "%s\\t%s\\0" "${h%% *}" "$f" \\
                          || { printf "cannot hash %s\\n" "$f" >&2; status=1; }
                      elif [ -e "$f" ]; then
                        printf "unreadable\\t%s\\0" "$f"
                      else
                        printf "cannot access %s\\n" "$f" >&2; status=1
                      fi
                    done
                    exit $status' sh {} + || status=1 ;;
              *) printf "not an absolute path: %s\\n" "$d" >&2; status=1 ;;
              esac
            done
            exit $status
            """;

    private Sha256Listing() {
    }

    static List<String> command(List<String> dirs) {
        return Stream.concat(Stream.of("/bin/sh", "-c", SCRIPT, "sh"), dirs.stream()).toList();
    }
}
