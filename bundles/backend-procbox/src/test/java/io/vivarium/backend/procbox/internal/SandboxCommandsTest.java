package io.vivarium.backend.procbox.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import io.vivarium.api.spi.AttachedVolume;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SandboxCommandsTest {

    private static final List<String> HOSTILE = List.of("a b", "it's \"quoted\"", "$(touch /tmp/pwned)", "`id`",
            "line1\nline2", "-n", "--", "*", "; rm -rf /", "$HOME");
    private static final List<String> SCRIPTS = List.of(SandboxCommands.JOIN_CGROUP_SCRIPT,
            SandboxCommands.CHDIR_SCRIPT);

    private static final Path AGENT = Path.of("/var/agent dir/vivarium-agent");

    private final SandboxCommands commands = new SandboxCommands(Path.of("/usr/bin/bwrap"),
            List.of("--symlink", "usr/bin", "/bin"), false, AGENT);

    private static ProcboxRecord sandbox(Path cgroup, boolean userNamespace) {
        return new ProcboxRecord(new InitProcess(4242, "123"), 65534, 65534, cgroup, null, userNamespace);
    }

    private List<String> launch(Path cgroup, String sandboxId, boolean userNamespace) {
        return commands.launch(LaunchFiles.in(Path.of("/d")), cgroup == null ? List.of() : List.of(cgroup), null,
                Path.of("/d/work"), null, Path.of("/d/agent"), sandboxId, 1000, 1000, userNamespace, List.of(), null);
    }

    @Test
    void execPassesEveryArgumentAsItsOwnElementAfterTheWrappers() {
        List<String> argv = commands.exec(sandbox(null, false), "/work", HOSTILE);

        assertEquals(List.of("/usr/bin/setsid", "/usr/bin/nsenter", "-t", "4242", "-a", "-r", "-w", "--",
                "/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--no-new-privs", "--"),
                argv.subList(0, argv.size() - HOSTILE.size()));
        assertEquals(HOSTILE, argv.subList(argv.size() - HOSTILE.size(), argv.size()));
    }

    @Test
    void underAnInheritedNoNewPrivsNsenterDropsToTheSandboxUserWithoutSetpriv() {
        SandboxCommands nnp = new SandboxCommands(Path.of("/usr/bin/bwrap"), List.of(), true, AGENT);
        List<String> argv = nnp.exec(sandbox(null, false), "/tmp", HOSTILE);

        assertEquals(List.of("/usr/bin/setsid", "/usr/bin/nsenter", "-t", "4242", "-a", "-r", "-w", "-S", "65534", "-G",
                "65534", "--", "/bin/sh", "-c", SandboxCommands.CHDIR_SCRIPT, "sh", "/tmp"),
                argv.subList(0, argv.size() - HOSTILE.size()));
        assertEquals(HOSTILE, argv.subList(argv.size() - HOSTILE.size(), argv.size()));
        assertTrue(nnp.exec(sandbox(null, true), "/work", HOSTILE).contains("/usr/bin/setpriv"),
                "a user-namespace sandbox still needs setpriv");
    }

    @Test
    void theHostnameOfAPooledSandboxIsSetInItsUtsNamespaceFromAUserNamespaceItsRootHasPowerIn() {
        assertEquals(List.of("/usr/bin/nsenter", "-t", "4242", "-u", "--", AGENT.toString(), "--set-hostname"),
                commands.settingHostname(sandbox(null, false)));
        assertEquals(List.of("/usr/bin/nsenter", "-t", "4242", "-U", "--preserve-credentials", "-u", "--", AGENT.toString(),
                "--set-hostname"), commands.settingHostname(sandbox(null, true)));
    }

    @Test
    void readsNoNewPrivsFromTheStatusFile() {
        assertTrue(ProcFs.noNewPrivileges("Name:\tjava\nNoNewPrivs:\t1\nSeccomp:\t0\n"));
        assertFalse(ProcFs.noNewPrivileges("Name:\tjava\nNoNewPrivs:\t0\n"));
    }

    @Test
    void execChangesDirectoryThroughAPositionalParameterOnlyWhenNotInTheWorkspace() {
        String cwd = "/tmp/dir with 'quotes' and $(x)\nnewline";
        List<String> argv = commands.exec(sandbox(null, false), cwd, HOSTILE);

        int sh = argv.indexOf("/bin/sh");
        assertEquals(List.of("/bin/sh", "-c", SandboxCommands.CHDIR_SCRIPT, "sh", cwd), argv.subList(sh, sh + 5));
        assertEquals(HOSTILE, argv.subList(sh + 5, argv.size()));
        assertFalse(commands.exec(sandbox(null, false), "/work", HOSTILE).contains("/bin/sh"));
    }

    @Test
    void execJoinsTheCgroupsFirstWhenThereAreAny() {
        Path cgroup = Path.of("/sys/fs/cgroup/memory/vivarium/a b");
        List<String> argv = commands.exec(sandbox(cgroup, false), "/work", List.of("true"));

        assertEquals(List.of("/bin/sh", "-c", SandboxCommands.JOIN_CGROUP_SCRIPT, "sh",
                "/sys/fs/cgroup/memory/vivarium/a b/cgroup.procs", "--", "/usr/bin/setsid"), argv.subList(0, 7));

        ProcboxRecord both = new ProcboxRecord(new InitProcess(4242, "123"), 65534, 65534, cgroup,
                Path.of("/sys/fs/cgroup/pids/vivarium/a b"), false);
        assertEquals(List.of("/sys/fs/cgroup/memory/vivarium/a b/cgroup.procs",
                "/sys/fs/cgroup/pids/vivarium/a b/cgroup.procs", "--", "/usr/bin/setsid"),
                commands.exec(both, "/work", List.of("true")).subList(4, 8));
    }

    @Test
    void execInAUserNamespaceKeepsCredentialsAndSkipsTheHostTimeNamespace() {
        List<String> argv = commands.exec(sandbox(null, true), "/work", List.of("id"));

        assertEquals(List.of("/usr/bin/setsid", "/usr/bin/nsenter", "-t", "4242", "-U", "-C", "-m", "-u", "-i", "-n",
                "-p", "-r", "-w", "--preserve-credentials", "--", "/usr/bin/setpriv", "--no-new-privs", "--", "id"),
                argv);
    }

    @Test
    void launchPassesPathsAsPositionalParameters() {
        Path dir = Path.of("/var/lib/vivarium/$(reboot) dir\nx");
        LaunchFiles files = LaunchFiles.in(dir);
        Path work = dir.resolve("work");
        WorkspaceImage image = new WorkspaceImage(Path.of("/t/$(x).ext4"), dir.resolve("workspace.ext4"));
        List<String> argv = commands.launch(files, List.of(), image, work, dir.resolve("view"),
                dir.resolve("agent"), "sbx-1", 65534, 65534, false, List.of(), null);

        assertEquals(List.of(AGENT.toString(), "--launch", "--detach", files.pidFile().toString(), files.infoFile().toString(), "/t/$(x).ext4",
                dir.resolve("workspace.ext4").toString(), work.toString(), dir.resolve("view").toString(), "--",
                "/usr/bin/bwrap", "--info-fd", "3"), argv.subList(0, 13));
        int bind = argv.indexOf("--bind");
        assertEquals(List.of("--bind", work.toString(), "/work"), argv.subList(bind, bind + 3));
        int symlink = argv.indexOf("--symlink");
        assertEquals(List.of("--symlink", "usr/bin", "/bin"), argv.subList(symlink, symlink + 3));
        int run = argv.indexOf("--dir");
        assertEquals(List.of("--dir", "/run", "--ro-bind", AGENT.toString(), "/run/vivarium-agent",
                "--bind", dir.resolve("agent").toString(), "/run/vivarium",
                "--perms", "0700", "--dir", "/run/vivarium-daemon", "--bind", dir.resolve("view").toString(),
                "/run/vivarium-daemon/work", "--remount-ro", "/",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
                "--as-pid-1", "--", "/run/vivarium-agent", "--listen", "unix:/run/vivarium/agent.sock", "--user", "65534:65534"),
                argv.subList(run, argv.size()));
        assertFalse(argv.contains("--unshare-user"));
        assertFalse(argv.contains("/usr/bin/setpriv"), "the agent drops to the sandbox user by itself");
        assertTrue(argv.containsAll(List.of("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts")));
    }

    @Test
    void launchStartsInTheCgroupWhenThereIsOneAndMountsNothingWithoutAnImage() {
        Path cgroup = Path.of("/sys/fs/cgroup/memory/vivarium/sbx-1");
        List<String> argv = launch(cgroup, "sbx-1", false);

        assertEquals(List.of("", "", "/d/work", "", cgroup.resolve("cgroup.procs").toString(), "--"), argv.subList(5, 11));
    }

    @Test
    void launchInAUserNamespaceMapsTheDaemonToRootInside() {
        List<String> argv = launch(null, "sbx-1", true);

        int unshare = argv.indexOf("--unshare-user");
        assertEquals(List.of("--unshare-user", "--uid", "0", "--gid", "0"), argv.subList(unshare, unshare + 5));
        assertEquals(List.of("/run/vivarium", "--remount-ro", "/", "--cap-drop", "ALL", "--as-pid-1", "--",
                "/run/vivarium-agent", "--listen", "unix:/run/vivarium/agent.sock"),
                argv.subList(argv.size() - 10, argv.size()),
                "bwrap leaves it no capabilities; it stays the daemon's uid, and is the init itself");
    }

    @Test
    void twinRecordsItsPidsAndJoinsOnlyTheSandboxsNetworkIpcAndUtsNamespaces() {
        Path scratch = Path.of("/d/dryrun-1");
        LaunchFiles files = LaunchFiles.in(scratch);
        Path cgroup = Path.of("/sys/fs/cgroup/memory/vivarium/sbx-1");
        List<String> argv = commands.twin(sandbox(cgroup, false), files, scratch.resolve("merged"), List.of(), "/work", HOSTILE);

        assertEquals(List.of(AGENT.toString(), "--launch", files.pidFile().toString(),
                files.infoFile().toString(), "", "", "/d/dryrun-1/merged", "", cgroup.resolve("cgroup.procs").toString(),
                "--", "/usr/bin/setsid", "/usr/bin/nsenter", "-t", "4242", "-n", "-i", "-u", "--",
                "/usr/bin/bwrap", "--info-fd", "3", "--unshare-pid", "--unshare-cgroup-try", "--die-with-parent",
                "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin"), argv.subList(0, 30));
        int bind = argv.indexOf("--bind");
        assertEquals(List.of("--bind", "/d/dryrun-1/merged", "/work"), argv.subList(bind, bind + 3));
        assertEquals(HOSTILE, argv.subList(argv.size() - HOSTILE.size(), argv.size()));
        assertEquals(List.of("--", "/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                "--no-new-privs", "--"), argv.subList(argv.size() - HOSTILE.size() - 9, argv.size() - HOSTILE.size()));
        assertFalse(argv.stream().anyMatch(arg -> arg.matches("--unshare-(net|ipc|uts|user)|--hostname")));
    }

    @Test
    void twinOfAnUnprivilegedSandboxJoinsItsUserNamespaceFirst() {
        List<String> argv = commands.twin(sandbox(null, true), LaunchFiles.in(Path.of("/d/dryrun-1")),
                Path.of("/d/dryrun-1/copy"), List.of(), "/tmp", List.of("id"));

        int nsenter = argv.indexOf("/usr/bin/nsenter");
        assertEquals(List.of("/usr/bin/nsenter", "-t", "4242", "-U", "-n", "-i", "-u", "--preserve-credentials", "--"),
                argv.subList(nsenter, nsenter + 9));
        assertEquals("--", argv.get(8), "an unlimited sandbox joins no cgroup");
        assertEquals(List.of("--", "/usr/bin/setpriv", "--no-new-privs", "--", "/bin/sh", "-c",
                SandboxCommands.CHDIR_SCRIPT, "sh", "/tmp", "id"), argv.subList(argv.size() - 10, argv.size()));
    }

    @Test
    void volumesAreBoundAfterTheWorkspaceTheyMayLieInReadOnlyWhereAsked() {
        List<AttachedVolume> volumes = List.of(new AttachedVolume("data", Path.of("/s/volume-binds/sbx-1/0"),
                "/work/data", false), new AttachedVolume("ref", Path.of("/s/volume-binds/sbx-1/1"), "/ref", true));
        List<String> launch = commands.launch(LaunchFiles.in(Path.of("/d")), List.of(), null, Path.of("/d/work"), null,
                Path.of("/d/agent"), "sbx-1", 1000, 1000, false, volumes, null);
        List<String> twin = commands.twin(sandbox(null, false), LaunchFiles.in(Path.of("/d/dryrun-1")),
                Path.of("/d/dryrun-1/merged"), volumes, "/workspace", List.of("id"));

        for (List<String> argv : List.of(launch, twin)) {
            int workspace = argv.indexOf(SandboxCommands.WORKSPACE);
            int data = argv.indexOf("/work/data");
            assertTrue(workspace > 0 && data > workspace, argv.toString());
            assertEquals(List.of("--bind", "/s/volume-binds/sbx-1/0", "/work/data"), argv.subList(data - 2, data + 1));
            int ref = argv.indexOf("/ref");
            assertEquals(List.of("--ro-bind", "/s/volume-binds/sbx-1/1", "/ref"), argv.subList(ref - 2, ref + 1));
        }
    }

    @Test
    void aSandboxOnAnImageRootGetsTheImagesEntriesReadOnlyNotTheHostsAndItsTwinToo(@TempDir Path rootfs) throws Exception {
        Files.createDirectories(rootfs.resolve("usr/bin"));
        Files.createDirectories(rootfs.resolve("etc"));
        Files.createDirectories(rootfs.resolve("work"));
        Files.createDirectories(rootfs.resolve("proc"));
        Files.createSymbolicLink(rootfs.resolve("bin"), Path.of("usr/bin"));
        List<String> launch = commands.launch(LaunchFiles.in(Path.of("/d")), List.of(), null, Path.of("/d/work"), null,
                Path.of("/d/agent"), "sbx-1", 1234, 2345, false, List.of(), rootfs);
        ProcboxRecord onImage = new ProcboxRecord(new InitProcess(4242, "123"), 1234, 2345, null, null, false,
                SandboxCommands.AGENT_SOCKET, null, rootfs);
        List<String> twin = commands.twin(onImage, LaunchFiles.in(Path.of("/d/dryrun-1")), Path.of("/d/dryrun-1/merged"),
                List.of(), "/work", List.of("id"));

        for (List<String> argv : List.of(launch, twin)) {
            String joined = String.join(" ", argv);
            assertTrue(joined.contains("--ro-bind " + rootfs.resolve("usr") + " /usr"), joined);
            assertTrue(joined.contains("--ro-bind " + rootfs.resolve("etc") + " /etc"), joined);
            assertTrue(joined.contains("--symlink usr/bin /bin"), joined);
            assertFalse(joined.contains("--ro-bind /usr /usr") || joined.contains("--ro-bind /etc /etc"), joined);
            assertFalse(joined.contains(rootfs.resolve("work").toString()) || joined.contains(rootfs.resolve("proc").toString()),
                    "the sandbox's own /work and /proc, not the image's: " + joined);
        }
        assertTrue(String.join(" ", launch).contains("--user 1234:2345"), launch.toString());
        assertFalse(twin.contains(SandboxCommands.SETPRIV), "the image's own setpriv never runs as root: " + twin);
        int run = twin.indexOf("--run-as");
        assertEquals(List.of(SandboxCommands.AGENT_BINARY, "--run-as", "1234:2345", "--"), twin.subList(run - 1, run + 3),
                "the host's agent, bound in, drops to the sandbox user: " + twin);
        assertTrue(String.join(" ", twin).contains("--ro-bind " + AGENT + " " + SandboxCommands.AGENT_BINARY), twin.toString());
    }

    @Test
    void scriptsOnlyReferToPositionalParameters() {
        for (String script : SCRIPTS) {
            String withoutPositionals = script.replaceAll("\"\\$[1-6@]\"", "").replace("$$", "");
            assertFalse(withoutPositionals.contains("$"), script);
        }
    }

    @Test
    void hostnameIsCappedAtTheKernelLimit() {
        String id = String.join("", Collections.nCopies(70, "a"));
        List<String> argv = launch(null, id, false);

        assertEquals(63, argv.get(argv.indexOf("--hostname") + 1).length());
    }
}
