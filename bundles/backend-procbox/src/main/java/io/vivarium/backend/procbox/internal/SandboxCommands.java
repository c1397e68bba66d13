package io.vivarium.backend.procbox.internal;

import io.vivarium.api.ApiException;
import io.vivarium.kit.agent.AgentBinary;
import java.nio.file.Files;
import java.nio.file.Path;

import io.vivarium.api.spi.AttachedVolume;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds the argv that starts a sandbox, the argv that runs a command inside one and the argv
 * that runs a command in a twin of one. Every path and argument travels as its own argv element;
 * the shell snippets are constants that only ever refer to their positional parameters.
 */
final class SandboxCommands {

    static final String WORKSPACE = "/work";

    static final String SH = "/bin/sh";
    private static final String END_OF_CGROUPS = "--";
    /** Joins the cgroups; then drops the PWD the shell exported, which is the daemon's and not the command's. */
    private static final String JOIN_LOOP = "while [ \"$1\" != " + END_OF_CGROUPS + " ]; do echo $$ > \"$1\"; shift; done; "
            + "shift; unset PWD; ";
    static final String SETSID = "/usr/bin/setsid";
    static final String NSENTER = "/usr/bin/nsenter";
    static final String SETPRIV = "/usr/bin/setpriv";

    /**
     * The agent binary's host-side mode ({@code guest-agent/src/launch.c}) that starts a sandbox or a
     * twin: records its pid (the later bwrap's), opens bwrap's info file as fd 3, makes the workspace
     * when an image is given (a sparse copy of the template when one is named, then the image attached
     * to a free loop device and mounted at the workspace directory), binds the workspace's walk view
     * when one is named ({@link WalkView}), both in a mount namespace of its own that the sandbox's is
     * copied from (the host's mount table stays as it is), joins the cgroups listed up to {@code --},
     * then execs what follows. One process does
     * what a shell, {@code setsid}, {@code cp} and {@code mount} did: the CPU a start costs is what
     * bounds a fork of many children.
     */
    static final String LAUNCH = "--launch";
    /** The agent's mode that reads a hostname on its stdin and sets it. */
    static final String SET_HOSTNAME = "--set-hostname";
    /** {@link #LAUNCH}'s first option: fork, return at once, and start in a session of its own. */
    static final String DETACH = "--detach";
    /** Joins the cgroups listed up to {@code --} before exec'ing the rest, so the whole command tree is charged to them. */
    static final String JOIN_CGROUP_SCRIPT = "set -e; " + JOIN_LOOP + "exec \"$@\"";
    static final String CHDIR_SCRIPT = "cd \"$1\" && shift && exec \"$@\"";

    /**
     * Where the host's agent binary ({@link AgentBinary}) appears, read-only, in every sandbox, and
     * where the sandbox's agent directory is bound: {@code /run} is made by bwrap in the sandbox's
     * own root, whatever the host has there.
     */
    static final String AGENT_BINARY = "/run/" + AgentBinary.FILE_NAME;
    static final String AGENT_DIR = "/run/vivarium";
    /**
     * Root's alone (0700) in every sandbox: what only the daemon reaches there, through
     * {@code /proc/PID/root}. The sandbox user cannot enter it, the agent (root without
     * {@code CAP_DAC_OVERRIDE}) only as its owner.
     */
    static final String DAEMON_DIR = "/run/vivarium-daemon";
    /** Where the launch binds the workspace's {@link WalkView}, in the sandbox's own mount namespace. */
    static final String WALK_VIEW = DAEMON_DIR + "/work";
    static final String AGENT_SOCKET_NAME = "agent.sock";
    static final Path AGENT_SOCKET = Path.of(AGENT_DIR, AGENT_SOCKET_NAME);
    /** The agent's name in {@code /proc/PID/comm}: the keep-alive and the sandbox's init ({@code --as-pid-1}). */
    static final String AGENT_NAME = AgentBinary.FILE_NAME;
    /**
     * The capabilities the agent starts with as root, and drops for good in the worker it forks:
     * enough to become the sandbox user and empty its bounding set, nothing that reaches past the
     * sandbox (bwrap run by root would otherwise leave it all of root's).
     */
    private static final List<String> AGENT_CAPABILITIES = List.of("--cap-drop", "ALL",
            "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP");

    private static final int MAX_HOSTNAME = 63;

    private final Path bwrap;
    private final List<String> rootLayout;
    private final boolean inheritedNoNewPrivs;
    private final Path agentBinary;

    /**
     * @param rootLayout bubblewrap arguments recreating the host's /bin, /lib... ({@link HostRootLayout})
     * @param inheritedNoNewPrivs the daemon runs with no_new_privs, so its children already have it
     *        and an exec can drop to the sandbox user with nsenter alone
     * @param agentBinary the host's agent binary ({@link AgentBinary}): every sandbox runs it, and
     *        its {@value #LAUNCH} mode starts them
     */
    private static final String RESOLV_CONF = "/etc/resolv.conf";
    private final Path resolvConf;

    SandboxCommands(Path bwrap, List<String> rootLayout, boolean inheritedNoNewPrivs, Path agentBinary) {
        this(bwrap, rootLayout, inheritedNoNewPrivs, agentBinary, null);
    }

    /** @param resolvConf the file bound at {@code /etc/resolv.conf} ({@link SandboxNetworks}), or null for the host's */
    SandboxCommands(Path bwrap, List<String> rootLayout, boolean inheritedNoNewPrivs, Path agentBinary, Path resolvConf) {
        this.resolvConf = resolvConf;
        this.bwrap = bwrap;
        this.rootLayout = List.copyOf(rootLayout);
        this.inheritedNoNewPrivs = inheritedNoNewPrivs;
        this.agentBinary = agentBinary;
    }

    /** The host's agent binary, whose {@value #LAUNCH} mode starts sandboxes; null if it could not be written. */
    Path agentBinary() {
        return agentBinary;
    }

    /**
     * The detached launch ({@value #DETACH}): the sandbox is a session of its own, reparented away
     * from the daemon, so it survives the daemon's exit.
     *
     * @param cgroups the cgroups to start in
     * @param image the workspace image to make and mount at {@code workDir}, or null to bind {@code workDir} as it is
     * @param walkView where the launch binds the workspace for the daemon's walks, bound on at
     *        {@value #WALK_VIEW} in the sandbox; null for no view
     */
    List<String> launch(LaunchFiles files, List<Path> cgroups, WorkspaceImage image, Path workDir, Path walkView,
            Path agentDir, String sandboxId, int uid, int gid, boolean userNamespace, List<AttachedVolume> volumes,
            Path rootfs) {
        List<String> argv = recording(true, files, cgroups, image, workDir, walkView);
        argv.addAll(reportingBwrap());
        argv.addAll(isolation(workDir, sandboxId, userNamespace, volumes, rootfs));
        argv.addAll(List.of("--dir", "/run", "--ro-bind", agentBinary.toString(), AGENT_BINARY,
                "--bind", agentDir.toString(), AGENT_DIR));
        if (walkView != null) {
            argv.addAll(List.of("--perms", "0700", "--dir", DAEMON_DIR, "--bind", walkView.toString(), WALK_VIEW));
        }
        // the root last: read-only once everything is mounted in it, so /run cannot be swapped
        argv.addAll(List.of("--remount-ro", "/"));
        List<String> agent = new ArrayList<>(List.of(AGENT_BINARY, "--listen", "unix:" + AGENT_SOCKET));
        if (userNamespace) {
            // the agent itself is PID 1: bwrap's own init would run as the sandbox's uid, dumpable,
            // with the host's procbox.log as its stdout and stderr, open to /proc/1/fd from inside.
            // No capabilities, not even in its own user namespace (CAP_SYS_PTRACE would reach the
            // agent all the same): what bwrap gives a non-root caller, and now a root one too
            argv.addAll(List.of("--cap-drop", "ALL", "--as-pid-1"));
        } else {
            // the agent binds its socket as root (0600, in the root-owned agent directory), so that
            // the sandbox user can neither reach nor replace it, then serves as uid:gid; its root
            // supervisor restarts that worker if a sandbox process kills it. It is PID 1 itself
            // (it reaps as one): bwrap's own init would be one more process in every sandbox, about
            // 0.3 MiB of the host's memory (its PSS, page tables and kernel stack)
            argv.addAll(AGENT_CAPABILITIES);
            argv.add("--as-pid-1");
            agent.addAll(List.of("--user", uid + ":" + gid));
        }
        argv.add("--");
        argv.addAll(agent);
        return argv;
    }

    /**
     * A sandbox's bubblewrap options (namespaces, filesystem, hostname) and its drop to the sandbox
     * user, followed by {@code command}: the bare spawn the benchmarks compare a sandbox with.
     */
    List<String> sandbox(Path workDir, String sandboxId, int uid, int gid, boolean userNamespace, List<String> command) {
        List<String> argv = new ArrayList<>(isolation(workDir, sandboxId, userNamespace, List.of(), null));
        argv.add("--");
        argv.addAll(dropPrivileges(uid, gid, userNamespace));
        argv.addAll(command);
        return argv;
    }

    /** The bubblewrap options of a sandbox: namespaces, filesystem, hostname. */
    private List<String> isolation(Path workDir, String sandboxId, boolean userNamespace, List<AttachedVolume> volumes,
            Path rootfs) {
        List<String> argv = new ArrayList<>();
        if (userNamespace) {
            // uid 0 inside maps to the daemon's uid; any other uid would make bwrap nest a second
            // user namespace, which nsenter cannot then enter without privileges
            argv.addAll(List.of("--unshare-user", "--uid", "0", "--gid", "0"));
        }
        argv.addAll(List.of("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try"));
        argv.addAll(filesystem(workDir, volumes, rootfs));
        argv.addAll(List.of("--hostname", hostname(sandboxId)));
        return argv;
    }

    /**
     * The agent's {@value #SET_HOSTNAME} in the sandbox's UTS namespace (where its hostname is set),
     * with the powers of its user namespace's root if it has one; in the host's PID and mount
     * namespaces, the binary the host's.
     */
    List<String> settingHostname(ProcboxRecord sandbox) {
        List<String> argv = new ArrayList<>(List.of(NSENTER, "-t", Long.toString(sandbox.init().pid())));
        if (sandbox.userNamespace()) {
            argv.addAll(List.of("-U", "--preserve-credentials"));
        }
        argv.addAll(List.of("-u", "--", agentBinary.toString(), SET_HOSTNAME));
        return argv;
    }

    /** The hostname of the sandbox {@code sandboxId}: its id, cut to the length a hostname may have. */
    static String hostname(String sandboxId) {
        return sandboxId.length() > MAX_HOSTNAME ? sandboxId.substring(0, MAX_HOSTNAME) : sandboxId;
    }

    /**
     * For a sandbox without an agent (made by an earlier procbox): enters the namespaces, root and
     * cwd ({@value #WORKSPACE}) of the sandbox's init and runs {@code args} there as the sandbox user. {@code setsid} makes the host-side process the
     * leader of a new process group that the whole command tree belongs to, so a timeout can
     * kill it as one.
     */
    List<String> exec(ProcboxRecord sandbox, String cwd, List<String> args) {
        List<String> argv = new ArrayList<>();
        if (!sandbox.cgroups().isEmpty()) {
            argv.addAll(List.of(SH, "-c", JOIN_CGROUP_SCRIPT, "sh"));
            argv.addAll(procsFiles(sandbox.cgroups()));
        }
        argv.addAll(List.of(SETSID, NSENTER, "-t", Long.toString(sandbox.init().pid())));
        // nsenter's --wd would resolve in the host's mount namespace; -r -w take the init's root and cwd
        if (sandbox.userNamespace()) {
            // -a would also try the host's time namespace, which an unprivileged caller may not enter
            argv.addAll(List.of("-U", "-C", "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--preserve-credentials"));
        } else {
            argv.addAll(List.of("-a", "-r", "-w"));
            if (inheritedNoNewPrivs) {
                // the hot path: nsenter sets the ids itself (dropping supplementary groups), saving setpriv's exec
                argv.addAll(List.of("-S", Integer.toString(sandbox.uid()), "-G", Integer.toString(sandbox.gid()), "--"));
                argv.addAll(inCwd(cwd, args));
                return argv;
            }
        }
        argv.add("--");
        argv.addAll(asSandboxUser(sandbox, cwd, args));
        return argv;
    }

    /**
     * Runs {@code args} in a short-lived twin of the sandbox: the sandbox's filesystem layout with
     * {@code workDir} at {@value #WORKSPACE}, its user, cgroup and network, IPC and UTS namespaces
     * (so the command reaches the sandbox's loopback services under its hostname), but a PID
     * namespace of its own. bwrap's outer process exits as soon as the command does, and
     * {@code --die-with-parent} then kills the namespace's init, which takes along everything the
     * command left running. Like {@link #exec}, the host-side process leads a process group.
     */
    List<String> twin(ProcboxRecord sandbox, LaunchFiles files, Path workDir, List<AttachedVolume> volumes, String cwd,
            List<String> args) {
        List<String> argv = recording(false, files, sandbox.cgroups(), null, workDir, null);
        argv.addAll(List.of(SETSID, NSENTER, "-t", Long.toString(sandbox.init().pid())));
        if (sandbox.userNamespace()) {
            // the network namespace belongs to the sandbox's user namespace: only there may it be joined
            argv.addAll(List.of("-U", "-n", "-i", "-u", "--preserve-credentials"));
        } else {
            argv.addAll(List.of("-n", "-i", "-u"));
        }
        argv.add("--");
        argv.addAll(reportingBwrap());
        argv.addAll(List.of("--unshare-pid", "--unshare-cgroup-try", "--die-with-parent"));
        argv.addAll(filesystem(workDir, volumes, sandbox.rootfs()));
        if (sandbox.rootfs() == null) {
            argv.add("--");
            argv.addAll(asSandboxUser(sandbox, cwd, args));
            return argv;
        }
        // on an image's root its own setpriv is not to be run as root: the host's agent, bound in, drops to the user
        argv.addAll(List.of("--dir", "/run", "--ro-bind", agentBinary.toString(), AGENT_BINARY, "--",
                AGENT_BINARY, "--run-as", sandbox.uid() + ":" + sandbox.gid(), "--"));
        argv.addAll(inCwd(cwd, args));
        return argv;
    }

    /** {@link #LAUNCH} with its files; it execs what follows, which keeps its pid. */
    private List<String> recording(boolean detach, LaunchFiles files, List<Path> cgroups, WorkspaceImage image,
            Path workDir, Path walkView) {
        if (agentBinary == null) {
            // availability refuses creates then; this keeps a dry-run of an adopted sandbox from a NullPointerException
            throw new ApiException(503, "procbox could not write its agent binary, so it starts no sandbox: "
                    + "GET /v1/backends says why");
        }
        List<String> argv = new ArrayList<>(List.of(agentBinary.toString(), LAUNCH));
        if (detach) {
            argv.add(DETACH);
        }
        argv.addAll(List.of(files.pidFile().toString(),
                files.infoFile().toString(),
                image == null || image.template() == null ? "" : image.template().toString(),
                image == null ? "" : image.file().toString(),
                workDir.toString(),
                walkView == null ? "" : walkView.toString()));
        argv.addAll(procsFiles(cgroups));
        return argv;
    }

    /** The {@code cgroup.procs} files of {@code cgroups}, then the {@code --} that ends the list. */
    private static List<String> procsFiles(List<Path> cgroups) {
        List<String> files = new ArrayList<>();
        cgroups.forEach(cgroup -> files.add(LimitCgroups.procsFile(cgroup).toString()));
        files.add(END_OF_CGROUPS);
        return files;
    }

    /** bwrap writing its info JSON to the fd {@value #LAUNCH} opened. */
    private List<String> reportingBwrap() {
        return List.of(bwrap.toString(), "--info-fd", "3");
    }

    /**
     * The sandbox's files: the host's /usr and /etc read-only (or the entries of {@code rootfs}, a
     * template's image, {@link ImageRootLayout}), private /proc, /dev and /tmp, {@code workDir} at
     * {@value #WORKSPACE}, then its volumes (each after what it may lie in).
     */
    private List<String> filesystem(Path workDir, List<AttachedVolume> volumes, Path rootfs) {
        List<String> args = new ArrayList<>();
        if (rootfs == null) {
            args.addAll(List.of("--ro-bind", "/usr", "/usr"));
            args.addAll(rootLayout);
            args.addAll(List.of("--ro-bind", "/etc", "/etc"));
        } else {
            args.addAll(ImageRootLayout.bwrapArgs(rootfs));
        }
        if (resolvConf != null && (rootfs == null ? Files.exists(Path.of(RESOLV_CONF)) : ImageRootLayout.hasResolvConf(rootfs))) {
            args.addAll(List.of("--ro-bind", resolvConf.toString(), RESOLV_CONF));
        }
        args.addAll(List.of("--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--tmpfs", "/tmp",
                "--bind", workDir.toString(), WORKSPACE, "--chdir", WORKSPACE));
        for (AttachedVolume v : volumes) {
            // the directories above a mount point bwrap makes follow its umask: open them to the sandbox user
            for (Path above = Path.of(v.mountPath()).getParent(); above.getParent() != null; above = above.getParent()) {
                args.addAll(List.of("--perms", "0755", "--dir", above.toString()));
            }
            args.addAll(List.of(v.readOnly() ? "--ro-bind" : "--bind", v.hostDir().toString(), v.mountPath()));
        }
        return args;
    }

    /** Drops to the sandbox user, then runs {@code args} in {@code cwd}. */
    private static List<String> asSandboxUser(ProcboxRecord sandbox, String cwd, List<String> args) {
        List<String> argv = new ArrayList<>(dropPrivileges(sandbox.uid(), sandbox.gid(), sandbox.userNamespace()));
        argv.addAll(inCwd(cwd, args));
        return argv;
    }

    private static List<String> inCwd(String cwd, List<String> args) {
        List<String> argv = new ArrayList<>();
        if (!cwd.equals(WORKSPACE)) {
            argv.addAll(List.of(SH, "-c", CHDIR_SCRIPT, "sh", cwd));
        }
        argv.addAll(args);
        return argv;
    }

    private static List<String> dropPrivileges(int uid, int gid, boolean userNamespace) {
        if (userNamespace) {
            return List.of(SETPRIV, "--no-new-privs", "--");
        }
        return List.of(SETPRIV, "--reuid", Integer.toString(uid), "--regid", Integer.toString(gid),
                "--clear-groups", "--no-new-privs", "--");
    }
}
