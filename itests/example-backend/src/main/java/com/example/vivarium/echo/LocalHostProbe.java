package com.example.vivarium.echo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.SandboxBackend;

/**
 * What this host offers example-local sandboxes: the agent binary (written or not) and a
 * {@code python3} for the agent's warm interpreter; the backend's availability and details. Always
 * honest about the one thing this backend never has: isolation.
 */
final class LocalHostProbe {

    /** Where the agent's interpreter looks for {@code python3}: the PATH it gives it (guest-agent/src/eval.c). */
    private static final List<Path> PYTHONS = List.of(Path.of("/usr/local/bin/python3"), Path.of("/usr/bin/python3"),
            Path.of("/bin/python3"));

    /** The agent binary, or null with {@link #agentProblem}. */
    private final Path agentBinary;
    private final String agentProblem;

    LocalHostProbe(Path agentBinary, String agentProblem) {
        this.agentBinary = agentBinary;
        this.agentProblem = agentProblem;
    }

    /** The interpreter the agent's eval would start, looked up on every call (a few stats), so installing one needs no restart. */
    Optional<Path> python() {
        return PYTHONS.stream().filter(Files::isExecutable).findFirst();
    }

    /** Available wherever the agent binary could be written; the reason says what is missing in any case. */
    Availability availability() {
        if (agentBinary == null) {
            return Availability.no(agentProblem);
        }
        return new Availability(true, "no isolation: sandboxes are plain host processes of the daemon's user ("
                + daemonUser() + "), which see and may change everything that user can; an example, not for production");
    }

    Map<String, String> details() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(SandboxBackend.DETAIL_ISOLATION, "none: host processes of " + daemonUser() + ", no namespaces, no limits");
        d.put(SandboxBackend.DETAIL_AGENT, agentBinary == null ? "none: " + agentProblem : agentBinary.toString());
        d.put("eval", python().map(p -> "the agent's warm interpreter, " + p)
                .orElse("none: no python3 in " + PYTHONS.stream().map(Path::getParent).toList()));
        d.put("images", LocalImages.DESCRIPTION);
        return d;
    }

    private static String daemonUser() {
        try {
            return "uid " + Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | UnsupportedOperationException e) {
            return "the daemon's uid";
        }
    }
}
