package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vivarium.kit.agent.AgentBinary;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent's {@code --launcher} mode, driven as procbox drives it, with launches that run no sandbox. */
class LaunchServerTest {

    @TempDir
    Path tmp;
    private Path agent;
    private LaunchServer server;

    @BeforeEach
    void install() throws IOException {
        agent = AgentBinary.install(tmp.resolve("agent"));
        server = new LaunchServer(agent);
    }

    @AfterEach
    void close() {
        server.close();
    }

    /** {@code --launch} without an image or view, and without detaching: the command's own exit status comes back. */
    private List<String> launch(boolean detach, String... command) {
        LaunchFiles files = LaunchFiles.in(tmp);
        List<String> argv = new ArrayList<>(List.of(agent.toString(), SandboxCommands.LAUNCH));
        if (detach) {
            argv.add(SandboxCommands.DETACH);
        }
        argv.addAll(List.of(files.pidFile().toString(), files.infoFile().toString(), "", "", tmp.toString(), "", "--"));
        argv.addAll(List.of(command));
        return argv;
    }

    @Test
    void runsALaunchWithItsOutputInTheLogAndNothingOfTheDaemonsEnvironment() throws IOException {
        Path log = tmp.resolve("launch.log");

        assertEquals(0, server.launch(launch(false, "/usr/bin/env"), log));
        assertEquals(0, server.launch(launch(false, "/bin/sh", "-c", "pwd; cat; echo to-stderr >&2"), log));
        assertEquals(3, server.launch(launch(false, "/bin/sh", "-c", "exit 3"), log), "the next request, same server");

        assertEquals(List.of("PATH=/usr/bin:/bin", "/", "to-stderr"), Files.readAllLines(log),
                "stdin from /dev/null, in /, PATH alone, both outputs appended");
    }

    @Test
    void aDetachedLaunchIsAnsweredAtOnceAndRunsOnInASessionOfItsOwn() throws Exception {
        Path log = tmp.resolve("detached.log");

        assertEquals(0, server.launch(launch(true, "/bin/sh", "-c", "sleep 0.3; echo done"), log));

        long pid = Long.parseLong(Files.readString(LaunchFiles.in(tmp).pidFile()).strip());
        ProcessHandle launched = ProcessHandle.of(pid).orElseThrow();
        assertTrue(launched.parent().filter(p -> p.pid() == ProcessHandle.current().pid()
                || launcher().map(ProcessHandle::pid).equals(Optional.of(p.pid()))).isEmpty(),
                "reparented away from the daemon and the launcher");
        launched.onExit().get();
        assertEquals(List.of("done"), Files.readAllLines(log));
    }

    @Test
    void aServerThatDiedIsStartedAgainForTheNextLaunch() throws Exception {
        Path log = tmp.resolve("again.log");
        assertEquals(0, server.launch(launch(false, "/bin/true"), log));
        ProcessHandle first = launcher().orElseThrow();
        first.destroyForcibly();
        first.onExit().get();

        assertEquals(0, server.launch(launch(false, "/bin/true"), log));
        assertTrue(launcher().filter(second -> second.pid() != first.pid()).isPresent(), "a new launcher runs");
    }

    private static Optional<ProcessHandle> launcher() {
        return ProcessHandle.current().children().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().arguments().map(a -> List.of(a).contains("--launcher")).orElse(false)).findFirst();
    }

    @Test
    void refusesWhatIsNotALaunch() {
        assertThrows(IllegalArgumentException.class, () -> server.launch(List.of(agent.toString(), "--run-as", "0:0"),
                tmp.resolve("x.log")));
        assertThrows(IllegalArgumentException.class, () -> server.launch(launch(false, "/bin/echo", "a\0b"),
                tmp.resolve("x.log")));
    }
}
