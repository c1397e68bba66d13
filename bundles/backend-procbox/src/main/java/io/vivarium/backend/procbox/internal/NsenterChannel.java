package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.PingResult;
import io.vivarium.api.spi.GuestChannel;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Runs commands in a sandbox by entering its init's namespaces with nsenter. */
final class NsenterChannel implements GuestChannel {

    private static final List<String> PING_COMMAND = List.of("/usr/bin/true");
    private static final Duration PING_TIMEOUT = Duration.ofSeconds(5);
    private static final int PING_OUTPUT_BYTES = 4096;

    private final String sandboxId;
    private final ProcboxRecord sandbox;
    private final SandboxCommands commands;
    private final SandboxFiles files;

    NsenterChannel(String sandboxId, ProcboxRecord sandbox, SandboxCommands commands) {
        this.sandboxId = sandboxId;
        this.sandbox = sandbox;
        this.commands = commands;
        this.files = new SandboxFiles(sandboxId, sandbox, commands);
    }

    @Override
    public byte[] readFile(String path, int maxBytes) {
        return files.read(path, maxBytes);
    }

    @Override
    public void writeFile(String path, byte[] content) {
        files.write(path, content);
    }

    /** A real round trip: runs {@code true} inside the sandbox. */
    @Override
    public PingResult ping() {
        long start = System.nanoTime();
        ExecResult result =
                run(PING_COMMAND, Map.of(), SandboxCommands.WORKSPACE, null, PING_TIMEOUT, PING_OUTPUT_BYTES);
        if (result.exitCode() != 0) {
            throw new ApiException(502, "sandbox " + sandboxId + " did not answer: "
                    + (result.timedOut() ? "timed out" : result.stderr().strip()));
        }
        return new PingResult(true, 1, (System.nanoTime() - start) / 1e6);
    }

    @Override
    public ExecResult exec(ExecRequest request) {
        return run(request.args(), request.env(), request.cwd(), request.stdin(),
                Duration.ofSeconds(request.timeoutSecs()), request.maxOutputBytes());
    }

    private ExecResult run(List<String> args, Map<String, String> env, String cwd, String stdin, Duration timeout,
            int maxOutputBytes) {
        // also guards against entering an unrelated process that reused the init's pid
        if (!sandbox.init().isRunning()) {
            throw new ApiException(503, "sandbox " + sandboxId + " is not running");
        }
        return ProcessRunner.run(commands.exec(sandbox, cwd, args), env, stdin, timeout, maxOutputBytes);
    }
}
