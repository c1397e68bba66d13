package io.vivarium.backend.gvisor.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.vivarium.common.exec.HostCommand;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The runsc commands of one container, each with the container's own state root. {@code run
 * --detach} writes its output to the container's log file, never to a pipe: the sandbox it leaves
 * behind inherits the pipe, which would then never close. The platform is ptrace: {@code kvm}
 * hangs on hosts whose KVM is itself paravirtual (measured on this project's CI machines).
 */
final class Runsc {

    static final String PLATFORM = "ptrace";
    static final String PLATFORM_REASON = "ptrace: runsc's kvm platform hangs on hosts whose own KVM is paravirtual "
            + "(nested), as on the CI machines; ptrace runs everywhere runsc does, as root";
    /** The oldest runsc build whose {@code checkpoint --leave-running} leaves the container running (the one tested: Debian 13's). */
    static final int IN_PLACE_SINCE = 20240729;
    /**
     * The first build whose network setup tells a network namespace from the host's on kernels from
     * 6.7 on (gvisor#10704): those before take any namespace whose {@code /proc/sys/net/core/rmem_default}
     * exists for the host's, which every namespace has there, and refuse to start with a network.
     */
    static final int NAMESPACE_CHECK_FIXED = 20240801;
    /**
     * How a runsc before {@link #NAMESPACE_CHECK_FIXED} is started for a container with a network:
     * in a mount namespace of its own where {@code /proc/sys/net} is an empty tmpfs, so that the
     * misread file is missing; the sandbox and gofer processes inherit that mount namespace and leave
     * the tmpfs behind when they move to their own roots.
     * runsc's own arguments follow as {@code "$@"}: nothing is interpolated into the script.
     */
    static final List<String> NAMESPACE_CHECK_WRAPPER = List.of("/usr/bin/unshare", "--mount", "--propagation", "private",
            "/bin/sh", "-c", "mount -t tmpfs -o size=4k,mode=0555 runsc-netns-check /proc/sys/net && exec \"$0\" \"$@\"");
    /** The build date in {@code runsc version 0.0~20240729.0} (Debian) or {@code runsc version release-20240729.0}. */
    private static final Pattern BUILD_DATE = Pattern.compile("[~-](\\d{8})(?:\\.|$)");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);
    /** runsc run's exit status when the kernel killed it: it joins the container's cgroup, whose OOM killer then picks it. */
    private static final int KILLED = 128 + 9;

    private final Path runsc;
    /** Whether this runsc needs {@link #NAMESPACE_CHECK_WRAPPER}; read from its version at the first start with a network. */
    private volatile Boolean misreadsNamespaces;

    Runsc(Path runsc) {
        this.runsc = runsc;
    }

    Path path() {
        return runsc;
    }

    /** {@code runsc --version}'s first line, e.g. {@code runsc version 0.0~20221219.0}. */
    String version() throws IOException {
        return HostCommand.run(List.of(runsc.toString(), "--version"), TOOL_TIMEOUT).lines().findFirst().orElse("").strip();
    }

    /**
     * Starts the container of {@code files} detached: no network, sockets the sandbox binds in its
     * host-backed mounts created on the host ({@code --host-uds=create}, which the agent's socket
     * needs; the sandbox may not connect to host sockets), the ptrace platform.
     */
    void runDetached(ContainerFiles files, String containerId, Duration timeout) throws IOException {
        detached(files, "run", List.of("run", "--detach", "--pid-file", files.sandboxPidFile().toString(), "--bundle",
                files.bundle().toString(), containerId), timeout);
    }

    /**
     * Starts the container of {@code files} detached from the checkpoint in {@code imageDir}
     * ({@code checkpoint.img}), with the same flags as {@link #runDetached}: its processes go on
     * where the checkpoint left them. The container's bundle must mount what the checkpointed one
     * did, in the same order.
     */
    void restoreDetached(ContainerFiles files, String containerId, Path imageDir, Duration timeout) throws IOException {
        detached(files, "restore", List.of("restore", "--detach", "--pid-file", files.sandboxPidFile().toString(),
                "--bundle", files.bundle().toString(), "--image-path", imageDir.toString(), containerId), timeout);
    }

    /**
     * runsc {@code command} of a container started detached; with runsc's own network stack
     * ({@code --network=sandbox}) over the interfaces of the network namespace its spec names, if it
     * names one, else none. Its sockets go to the ptrace platform's sandbox process, the agent's
     * socket is created on the host ({@code --host-uds=create}).
     */
    private void detached(ContainerFiles files, String what, List<String> command, Duration timeout) throws IOException {
        Files.deleteIfExists(files.sandboxPidFile());
        boolean network = OciSpec.networkNamespace(files.config()).isPresent();
        List<String> argv = new ArrayList<>(network && misreadsNamespaces() ? NAMESPACE_CHECK_WRAPPER : List.of());
        argv.addAll(global(files));
        if (network) {
            // a checkpoint (a branch, a dry-run, a sleep to cold) resets the open TCP connections, which
            // gVisor's stack cannot save ("endpoint cannot be saved in connected state") and then refuses the whole checkpoint
            argv.addAll(List.of("--network=sandbox", "--net-disconnect-ok"));
        } else {
            argv.add("--network=none");
        }
        argv.addAll(List.of("--host-uds=create", "--platform=" + PLATFORM));
        argv.addAll(command);
        ProcessBuilder builder = new ProcessBuilder(argv).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(files.log().toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        builder.environment().clear();
        builder.environment().putAll(Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL", "C"));
        Process process = builder.start();
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new IOException("runsc " + what + " did not return within " + timeout.toSeconds() + " s: "
                        + files.logTail());
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting the container", e);
        }
        if (process.exitValue() != 0) {
            String log = files.logTail();
            boolean outOfMemory = process.exitValue() == KILLED || log.contains("cannot allocate memory");
            throw new StartFailure("runsc " + what + " failed (exit status " + process.exitValue()
                    + (process.exitValue() == KILLED ? ", killed: out of memory in the container's cgroup" : "")
                    + "): " + log, outOfMemory);
        }
    }

    /**
     * {@code runsc checkpoint --leave-running --image-path DIR ID}: writes the container's state (its
     * processes' memory, the sandbox's kernel state; not the files of host mounts) to
     * {@code DIR}: {@code checkpoint.img} and, uncompressed, the memory in {@code pages.img} with its
     * index {@code pages_meta.img} (a restore of a warm Python then took half the time of one from
     * the default flate-compressed image, measured). The container stays in its sandbox process,
     * paused if it was.
     * Only from {@link #IN_PLACE_SINCE} on: before, {@code --leave-running} destroyed the container
     * and restored a new one in the foreground (measured on 0.0~20221219: the command never returns).
     */
    void checkpointLeavingRunning(ContainerFiles files, String containerId, Path imageDir) throws IOException {
        List<String> argv = new ArrayList<>(global(files));
        argv.addAll(List.of("checkpoint", "--leave-running", "--compression", "none", "--image-path", imageDir.toString(),
                containerId));
        HostCommand.run(argv, TOOL_TIMEOUT);
    }

    private boolean misreadsNamespaces() throws IOException {
        Boolean misreads = misreadsNamespaces;
        if (misreads == null) {
            misreads = misreadsNamespaces(version());
            misreadsNamespaces = misreads;
        }
        return misreads;
    }

    /** Whether a runsc of {@code version} needs {@link #NAMESPACE_CHECK_WRAPPER}: one built before {@link #NAMESPACE_CHECK_FIXED}, or of no date. */
    static boolean misreadsNamespaces(String version) {
        Matcher date = BUILD_DATE.matcher(version == null ? "" : version);
        return !date.find() || Integer.parseInt(date.group(1)) < NAMESPACE_CHECK_FIXED;
    }

    /**
     * Whether a runsc of {@code version} ({@link #version()}'s line, which names its build date)
     * checkpoints a container in place; false for a version that names no date.
     */
    static boolean checkpointsInPlace(String version) {
        Matcher date = BUILD_DATE.matcher(version == null ? "" : version);
        return date.find() && Integer.parseInt(date.group(1)) >= IN_PLACE_SINCE;
    }

    /** What runsc knows of the container: its status and its sandbox's host pid; empty if it knows no such container. */
    Optional<ContainerState> state(ContainerFiles files, String containerId) throws IOException {
        List<String> argv = new ArrayList<>(global(files));
        argv.addAll(List.of("state", containerId));
        String out;
        try {
            out = HostCommand.run(argv, TOOL_TIMEOUT);
        } catch (IOException e) {
            if (e.getMessage() != null && e.getMessage().contains("does not exist")) {
                return Optional.empty();
            }
            throw e;
        }
        JsonNode state = JSON.readTree(out.substring(Math.max(0, out.indexOf('{'))));
        return Optional.of(new ContainerState(state.path("status").asText(), state.path("pid").asLong(-1)));
    }

    /** {@code runsc kill ID KILL}: the container's init, and with it every process of the container. */
    void kill(ContainerFiles files, String containerId) throws IOException {
        signal(files, containerId, "KILL");
    }

    /** {@code runsc kill ID SIGNAL}: the container's init process only. */
    void signal(ContainerFiles files, String containerId, String signal) throws IOException {
        List<String> argv = new ArrayList<>(global(files));
        argv.addAll(List.of("kill", containerId, signal));
        HostCommand.run(argv, TOOL_TIMEOUT);
    }

    /** {@code runsc delete --force ID}: stops the sandbox if it runs and removes its state and cgroup. */
    void delete(ContainerFiles files, String containerId) throws IOException {
        List<String> argv = new ArrayList<>(global(files));
        argv.addAll(List.of("delete", "--force", containerId));
        HostCommand.run(argv, TOOL_TIMEOUT);
    }

    /** {@code runsc pause ID}: freezes every process of the container (its sandbox's cgroup freezer). */
    void pause(ContainerFiles files, String containerId) throws IOException {
        List<String> argv = new ArrayList<>(global(files));
        argv.addAll(List.of("pause", containerId));
        HostCommand.run(argv, TOOL_TIMEOUT);
    }

    /** {@code runsc resume ID}: runs a paused container on. */
    void resume(ContainerFiles files, String containerId) throws IOException {
        List<String> argv = new ArrayList<>(global(files));
        argv.addAll(List.of("resume", containerId));
        HostCommand.run(argv, TOOL_TIMEOUT);
    }

    private List<String> global(ContainerFiles files) {
        return List.of(runsc.toString(), "--root=" + files.runscRoot());
    }

    /** A start runsc refused or could not complete; {@code outOfMemory} when the container's memory limit stopped it. */
    static final class StartFailure extends IOException {

        private final boolean outOfMemory;

        StartFailure(String message, boolean outOfMemory) {
            super(message);
            this.outOfMemory = outOfMemory;
        }

        boolean outOfMemory() {
            return outOfMemory;
        }
    }

    /** A container's status as runsc states it ({@code running}, {@code stopped}, ...) and its sandbox's host pid (-1 once stopped). */
    record ContainerState(String status, long pid) {

        boolean running() {
            return status.equals("running");
        }

        boolean paused() {
            return status.equals("paused");
        }
    }
}
