package io.vivarium.backend.procbox.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * For the benchmarks (itests, through this module's test jar): the contenders a sandbox is
 * compared with, built by {@link SandboxCommands} itself so that they cannot drift from what
 * procbox runs. {@link #argv} spawns a bare {@code bwrap} with exactly the options a sandbox gets
 * (namespaces, binds, hostname, {@code --perms}, the drop to the default sandbox user);
 * {@link #enter} runs a command in a live one of those through {@code nsenter}, as procbox ran
 * every exec before it had an agent.
 */
public final class BareSandbox {
    private BareSandbox() {
    }

    /** {@code bwrap <a sandbox's options> command} with {@code workDir} at /work, as a root daemon with default settings runs it. */
    public static List<String> argv(Path workDir, String sandboxId, List<String> command) throws ReflectiveOperationException {
        List<String> argv = new ArrayList<>(List.of(bwrap().toString()));
        argv.addAll(commands().sandbox(workDir, sandboxId, uid(), gid(), false, command));
        return argv;
    }

    /**
     * {@code nsenter} into every namespace, the root and the working directory of {@code pid} (a
     * process of a live bare sandbox started with {@link #argv}), dropping to the sandbox user, then
     * {@code command}: procbox's own exec argv for a sandbox without an agent, under no_new_privs,
     * less the {@code setsid} that made each exec a process group of its own, which the bare
     * contender does not need.
     */
    public static List<String> enter(long pid, List<String> command) throws ReflectiveOperationException {
        InitProcess process = InitProcess.find(pid).orElseThrow(() -> new IllegalStateException("no process " + pid));
        List<String> argv = commands().exec(new ProcboxRecord(process, uid(), gid(), null, null, false),
                SandboxCommands.WORKSPACE, command);
        if (!argv.getFirst().equals(SandboxCommands.SETSID)) {
            throw new IllegalStateException("procbox's exec no longer starts with setsid: " + argv);
        }
        return List.copyOf(argv.subList(1, argv.size()));
    }

    /** Without an agent, as the bare contenders run none; under no_new_privs, as the daemon runs. */
    private static SandboxCommands commands() throws ReflectiveOperationException {
        return new SandboxCommands(bwrap(), HostRootLayout.bwrapArgs(Path.of("/")), true, null);
    }

    private static Path bwrap() throws ReflectiveOperationException {
        return Path.of((String) ProcboxConfig.class.getMethod("bwrap__path").getDefaultValue());
    }

    private static int uid() throws ReflectiveOperationException {
        return (Integer) ProcboxConfig.class.getMethod("sandbox__uid").getDefaultValue();
    }

    private static int gid() throws ReflectiveOperationException {
        return (Integer) ProcboxConfig.class.getMethod("sandbox__gid").getDefaultValue();
    }
}
