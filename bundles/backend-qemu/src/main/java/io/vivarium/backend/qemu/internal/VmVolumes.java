package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import io.vivarium.api.ApiException;
import io.vivarium.api.SandboxStatus;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.ExecSpec;
import io.vivarium.kit.guest.GuestAgentClient;
import io.vivarium.kit.guest.GuestAgentException;
import io.vivarium.kit.guest.GuestExecResult;

/**
 * A VM's volumes (docs/volumes.md): each a raw virtio disk on core's ext4 file, read-only where
 * asked, found in the guest by its serial, mounted whole at {@link VmVolume#guestRoot} by the agent
 * once the guest is up, and bound from there (its sub-path) at the path asked for. Before the VM
 * goes, its writable volumes are frozen ({@code guest-fsfreeze-freeze-list} with their roots, which
 * are mountpoints, so nothing else is): the guest writes back what it holds for them and leaves
 * each file system clean; nothing of the VM's memory or devices is captured.
 */
final class VmVolumes {

    private static final Duration MOUNT_TIMEOUT = Duration.ofSeconds(20);
    /** How long a freeze may take: its writeback of what the guest holds dirty for the volumes. */
    static final Duration FREEZE_TIMEOUT = Duration.ofSeconds(30);

    /**
     * Mounts one volume ($1 serial, $2 whole-volume mountpoint, $3 sub-path or empty, $4 path asked
     * for, $5 rw or ro), its arguments never read as shell text. The disk's node may appear a moment
     * after the guest is up (devtmpfs makes it as the driver probes).
     */
    private static final String MOUNT = """
            set -eu
            serial=$1 root=$2 sub=$3 at=$4 mode=$5
            dev= i=0
            while [ -z "$dev" ]; do
              for f in /sys/block/vd*/serial; do
                [ -r "$f" ] && [ "$(cat "$f")" = "$serial" ] && { d=${f%/serial}; dev=/dev/${d##*/}; }
              done
              [ -n "$dev" ] && [ -b "$dev" ] && break
              dev= i=$((i + 1))
              [ "$i" -le 100 ] || { echo "no disk with serial $serial in the guest" >&2; exit 1; }
              usleep 20000
            done
            mkdir -p "$root"
            mount -t ext4 -o "$mode,nosuid,nodev,noatime" "$dev" "$root"
            src=$root
            if [ -n "$sub" ]; then
              src=$root/$sub
              [ -e "$src" ] || [ "$mode" = ro ] || mkdir -p -m 0777 "$src"
              [ -d "$src" ] || { echo "sub_path $sub is not a directory of the volume" >&2; exit 1; }
              real=$(realpath "$src")
              case "$real/" in "$root"/*) ;; *) echo "sub_path $sub leads out of the volume (a link)" >&2; exit 1 ;; esac
              src=$real
            fi
            mkdir -p "$at"
            mount --bind "$src" "$at"
            [ "$mode" = rw ] || mount -o remount,bind,ro "$at"
            """;

    private VmVolumes() {
    }

    /** QEMU's options for the volumes' disks, after the VM's own disk. */
    static List<String> qemuArgs(List<VmVolume> volumes) {
        List<String> args = new ArrayList<>();
        for (int i = 0; i < volumes.size(); i++) {
            VmVolume v = volumes.get(i);
            String readOnly = v.readOnly() ? "on" : "off";
            args.addAll(List.of(
                    "-blockdev", "driver=raw,node-name=" + node(i) + ",read-only=" + readOnly + ",file.driver=file,"
                            + "file.read-only=" + readOnly + ",file.filename=" + QemuCommand.option(v.image()),
                    "-device", "virtio-blk-pci,drive=" + node(i) + ",serial=" + VmVolume.serial(i)));
        }
        return args;
    }

    private static String node(int index) {
        return "vol" + index;
    }

    /**
     * Mounts each volume where it was asked for, through the agent of a guest that has just come up;
     * on a template image's {@code root} with the guest's own busybox, as the image may have no shell.
     */
    static void mount(GuestAgentClient agent, List<VmVolume> volumes, VmRoot root) {
        for (int i = 0; i < volumes.size(); i++) {
            VmVolume v = volumes.get(i);
            ExecSpec spec = VmRoot.script(root, MOUNT, "vivarium-volume", VmVolume.serial(i), VmVolume.guestRoot(i),
                    v.subPath() == null ? "" : v.subPath(), v.mountPath(), v.readOnly() ? "ro" : "rw").withTimeout(MOUNT_TIMEOUT);
            GuestExecResult r = agent.exec(spec, Deadline.after(MOUNT_TIMEOUT.plusSeconds(5)));
            if (r.exitCode() == null || r.exitCode() != 0) {
                throw new ApiException(409, "volume " + v.name() + " cannot be mounted at " + v.mountPath() + " in the VM: "
                        + new String(r.stderr(), StandardCharsets.UTF_8).strip(), null, null);
            }
        }
    }

    /** The guest's mountpoints of the volumes it may write: what a freeze before it goes covers. */
    static List<String> writableRoots(List<VmVolume> volumes) {
        return IntStream.range(0, volumes.size()).filter(i -> !volumes.get(i).readOnly()).mapToObj(VmVolume::guestRoot)
                .toList();
    }

    /**
     * Freezes the writable volumes of {@code vm} before its QEMU goes ({@link #freeze}). A paused VM
     * runs for the freeze, and is paused again if it fails; a guest that powered off wrote its file
     * systems back as it went, and a failed one cannot be asked.
     */
    static void freezeBeforeEnd(QemuInstance vm) {
        List<VmVolume> volumes = vm.record().volumes();
        SandboxStatus status = vm.status();
        if (writableRoots(volumes).isEmpty() || status != SandboxStatus.RUNNING && status != SandboxStatus.PAUSED) {
            return;
        }
        try {
            if (status == SandboxStatus.PAUSED) {
                RunState.cont(vm.qmp());
                vm.paused(false);
            }
            freeze(vm.id(), vm.agent(), volumes);
        } catch (IOException e) {
            throw new ApiException(409, "cannot run the paused sandbox " + vm.id() + " to freeze its writable volumes "
                    + "before it stops: " + e.getMessage() + "; it stays as it was, its volumes reserved", null, e);
        } catch (ApiException e) {
            if (status == SandboxStatus.PAUSED) {
                try {
                    vm.qmp().execute("stop", null, QemuInstance.QMP_TIMEOUT);
                    vm.paused(true);
                } catch (IOException again) {
                    e.addSuppressed(again);
                }
            }
            throw e;
        }
    }

    /**
     * Freezes the writable volumes of a VM about to go, so that what its guest wrote is on them;
     * a freeze that fails thaws what it froze (the agent and the kit's client both do) and is a 409
     * that leaves the VM as it was.
     */
    static void freeze(String id, GuestAgentClient agent, List<VmVolume> volumes) {
        List<String> roots = writableRoots(volumes);
        if (roots.isEmpty()) {
            return;
        }
        try {
            agent.freeze(roots, Deadline.after(FREEZE_TIMEOUT));
        } catch (GuestAgentException e) {
            throw new ApiException(409, "cannot freeze the writable volumes of sandbox " + id + " before it stops, so "
                    + "what its guest wrote to them may not be on them yet: " + e.getMessage() + "; the sandbox keeps "
                    + "running and its volumes stay reserved: fix that in the guest (a file system it froze itself is "
                    + "thawed with fsfreeze --unfreeze), then delete it again; or delete it with ?force=true, which "
                    + "stops it without the freeze (what its guest had not written back is lost)", null, e);
        }
    }
}
