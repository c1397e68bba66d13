package io.vivarium.backend.procbox.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * For the benchmarks (itests, through this module's test jar): a bare {@code bwrap} that runs a
 * command in the foreground with exactly the options a sandbox gets (namespaces, binds, hostname,
 * {@code --perms}, the drop to the default sandbox user), built by {@link SandboxCommands} itself,
 * so that the contender cannot drift from what procbox runs.
 */
public final class BareSandbox {
    private BareSandbox() {
    }

    /** {@code bwrap <a sandbox's options> command} with {@code workDir} at /work, as a root daemon with default settings runs it. */
    public static List<String> argv(Path workDir, String sandboxId, List<String> command) throws ReflectiveOperationException {
        Path bwrap = Path.of((String) ProcboxConfig.class.getMethod("bwrap__path").getDefaultValue());
        int uid = (Integer) ProcboxConfig.class.getMethod("sandbox__uid").getDefaultValue();
        int gid = (Integer) ProcboxConfig.class.getMethod("sandbox__gid").getDefaultValue();
        // the bare spawn runs no agent, so none is named
        SandboxCommands commands = new SandboxCommands(bwrap, HostRootLayout.bwrapArgs(Path.of("/")), true, null);
        List<String> argv = new ArrayList<>(List.of(bwrap.toString()));
        argv.addAll(commands.sandbox(workDir, sandboxId, uid, gid, false, command));
        return argv;
    }
}
