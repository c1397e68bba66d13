package io.vivarium.itests.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.vivarium.testkit.Bounded;

/** What the host offers; tests that need something missing are skipped with the reason. */
final class Host {
    private Host() {
    }

    static boolean canRunProcbox() {
        return Files.isExecutable(Path.of("/usr/bin/bwrap")) && isRoot();
    }

    static final String PROCBOX_REASON = "needs bubblewrap (apt-get install bubblewrap) and a root daemon";

    static final String MEMORY_CGROUP_REASON = "no writable memory cgroup: neither /sys/fs/cgroup/cgroup.controllers"
            + " listing memory nor a writable cgroup v1 /sys/fs/cgroup/memory (as procbox probes it)";

    /** A cgroup the daemon's procbox can put a memory limit in: v2 with the memory controller or v1's memory hierarchy. */
    static boolean hasMemoryCgroup() {
        Path root = Path.of("/sys/fs/cgroup");
        try {
            Path controllers = root.resolve("cgroup.controllers");
            if (Files.isRegularFile(controllers)
                    && List.of(Files.readString(controllers).trim().split("\\s+")).contains("memory")) {
                return Files.isWritable(root);
            }
        } catch (IOException e) {
            return false;
        }
        return Files.isRegularFile(root.resolve("memory/memory.limit_in_bytes")) && Files.isWritable(root.resolve("memory"));
    }

    /** Where the daemon finds its guest images: $VIVARIUM_IMAGES, else ~/.cache/vivarium/images (the qemu feature's default). */
    static Path guestImages() {
        String dir = System.getenv("VIVARIUM_IMAGES");
        return dir != null && !dir.isBlank() ? Path.of(dir)
                : Path.of(System.getProperty("user.home"), ".cache", "vivarium", "images");
    }

    /** Why a test of the qemu backend cannot run here, or null if it can. */
    static String qemuMissing(String image) {
        if (!Files.isExecutable(Path.of("/usr/bin/qemu-system-x86_64")) || !Files.isExecutable(Path.of("/usr/bin/qemu-img"))) {
            return "needs qemu-system-x86_64 and qemu-img (apt-get install qemu-system-x86 qemu-utils)";
        }
        if (!Files.isDirectory(guestImages().resolve(image))) {
            return "no guest image " + image + " in " + guestImages() + ": build it with guest-agent/image/build-image.sh --out "
                    + guestImages() + " --variant " + image;
        }
        return null;
    }

    /** Why a test of the gvisor backend cannot run here, or null if it can. */
    static String gvisorMissing() {
        if (!Files.isExecutable(Path.of("/usr/bin/runsc"))) {
            return "needs runsc (apt-get install runsc)";
        }
        if (!isRoot()) {
            return "runsc runs containers only for a root daemon";
        }
        if (!Files.isDirectory(guestImages().resolve("gvisor-rootfs").resolve("usr"))) {
            return "no gvisor root filesystem in " + guestImages() + ": build it with bundles/backend-gvisor/build-rootfs.sh "
                    + "(.ci/run builds it, and fails when it cannot)";
        }
        return null;
    }

    /** What a host lacks for gVisor snapshots and checkpoints ({@link #gvisorMissing} and a runsc that checkpoints in place), or null. */
    static String gvisorCheckpointsMissing() {
        String missing = gvisorMissing();
        if (missing != null) {
            return missing;
        }
        try {
            Bounded.Ran runsc = Bounded.run(Duration.ofSeconds(30), "/usr/bin/runsc", "--version");
            String version = runsc.output();
            Matcher date = Pattern.compile("[~-](\\d{8})\\.").matcher(version);
            if (runsc.exitCode() != 0 || !date.find() || Integer.parseInt(date.group(1)) < 20240729) {
                return "runsc older than 0.0~20240729 cannot checkpoint a container in place (" + version.lines()
                        .findFirst().orElse("") + "): .ci/run installs Debian 13's";
            }
        } catch (IOException e) {
            return "runsc --version failed: " + e.getMessage();
        }
        return null;
    }

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }
}
