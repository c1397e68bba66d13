package io.vivarium.backend.gvisor.internal;

import io.vivarium.common.files.FileClones;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A container's files in its sandbox directory: the OCI bundle ({@code bundle/config.json} and,
 * for the host layout, the skeleton root {@code bundle/rootfs}), the workspace, the directory the
 * agent binds its socket in, runsc's state root and runsc's log. The agent's socket is reached
 * through a link in a short directory ({@code link}), whatever the length of the sandbox
 * directory's path (a socket path has at most 107 bytes).
 *
 * @param dir the sandbox's private directory
 * @param link {@code LINKDIR/ID}, a symbolic link to {@link #agentDir()}
 */
record ContainerFiles(Path dir, Path link) {

    static final String SOCKET_NAME = "agent.sock";
    private static final int TAIL_BYTES = 1500;

    static ContainerFiles of(Path dir, Path linkDir, String id) {
        return new ContainerFiles(dir, linkDir.resolve(id));
    }

    /** The sandbox's id: the name of its link. */
    String sandboxId() {
        return link.getFileName().toString();
    }

    Path bundle() {
        return dir.resolve("bundle");
    }

    Path config() {
        return bundle().resolve("config.json");
    }

    /** The skeleton root of the host layout: mount points and the host's /bin, /lib* links. */
    Path skeleton() {
        return bundle().resolve("rootfs");
    }

    Path workspace() {
        return dir.resolve("work");
    }

    Path agentDir() {
        return dir.resolve("agent");
    }

    /** runsc's {@code --root}: one per container, so nothing of it outlives the sandbox directory. */
    Path runscRoot() {
        return dir.resolve("runsc");
    }

    Path log() {
        return dir.resolve("runsc.log");
    }

    /** Where a checkpoint of the container is written before it is restored or stored elsewhere. */
    Path checkpoint() {
        return dir.resolve("checkpoint");
    }

    /** The container's checkpoints, one directory each ({@link GvisorCheckpoints}). */
    Path checkpoints() {
        return dir.resolve("checkpoints");
    }

    /** The checkpoint of a container saved for the cold tier ({@link GvisorHibernation}), kept until core recorded its wake. */
    Path cold() {
        return dir.resolve("cold");
    }

    /** Where a save for the cold tier writes its checkpoint before it is renamed to {@link #cold()}. */
    Path coldPartial() {
        return dir.resolve("cold.partial");
    }

    /** Where {@link #replaceWorkspace} makes the new workspace before it is renamed into place. */
    Path restoringWorkspace() {
        return dir.resolve("work.restoring");
    }

    /** Where {@link #replaceWorkspace} moves the live workspace aside until the new one is in place. */
    Path replacedWorkspace() {
        return dir.resolve("work.replaced");
    }

    /** A copy of the workspace taken while the container was paused for a checkpoint. */
    Path frozenWorkspace() {
        return dir.resolve("work.frozen");
    }

    /** Where {@code runsc run} and {@code runsc restore} write the pid of the sandbox process they started. */
    Path sandboxPidFile() {
        return dir.resolve("runsc.pid");
    }

    /** The host pid and start time of the sandbox process that runs the container now (after a restore). */
    Path sandboxProcess() {
        return dir.resolve("sandbox-process");
    }

    /**
     * The id of the container a restore is starting, written before {@code runsc restore} and
     * removed once the restore is recorded in {@link #sandboxProcess()}: a daemon killed in between
     * leaves a container only this names.
     */
    Path restoring() {
        return dir.resolve("restoring");
    }

    /** Holds a file named by the id of each container a restore replaced, until it is deleted ({@link RetiredContainers}). */
    Path retired() {
        return dir.resolve("retired");
    }

    /**
     * Present from before the agent is asked to let go of its socket for a checkpoint until it is
     * asked to listen again: a daemon killed in between leaves the container paused or its agent
     * deaf, which the next adopt undoes; a pause its caller wanted (a save for the cold tier), the
     * mark says so ({@link ContainerCheckpointer#PAUSE_KEPT}), and the next resume undoes it.
     */
    Path checkpointing() {
        return dir.resolve("checkpointing");
    }

    /** The agent's socket as the daemon connects to it, through {@link #link}. */
    Path agentSocket() {
        return link.resolve(SOCKET_NAME);
    }

    /** Makes the directories (the workspace owned by the sandbox user) and the link. */
    void prepare(int uid, int gid) throws IOException {
        Files.createDirectories(bundle());
        Files.createDirectories(agentDir());
        Files.setPosixFilePermissions(agentDir(), PosixFilePermissions.fromString("rwxr-xr-x"));
        Files.createDirectories(runscRoot());
        Files.createDirectories(workspace());
        Files.setAttribute(workspace(), "unix:uid", uid);
        Files.setAttribute(workspace(), "unix:gid", gid);
        relink();
    }

    /** (Re)makes the link; the link directory is a temporary one, which a reboot may have emptied. */
    void relink() throws IOException {
        Files.createDirectories(link.getParent());
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, agentDir());
    }

    /** Removes the link and everything in the sandbox directory this backend made. */
    void remove() throws IOException {
        if (Files.isSymbolicLink(link) && Files.readSymbolicLink(link).equals(agentDir())) {
            Files.delete(link);
        }
        for (Path p : new Path[] {bundle(), agentDir(), runscRoot(), workspace(), log(), checkpoint(),
                frozenWorkspace(), restoringWorkspace(), replacedWorkspace(), sandboxProcess(), restoring(),
                retired(), checkpointing(), sandboxPidFile(), checkpoints(), cold(), coldPartial()}) {
            FileClones.deleteTree(p);
        }
    }

    /**
     * Replaces the workspace by the one {@code fill} makes at {@link #restoringWorkspace()}: the live
     * one is renamed aside, the new one renamed in, the old one deleted last, so that a failure or
     * a daemon killed meanwhile leaves a whole workspace, or one {@link #finishWorkspaceSwap} puts back.
     */
    void replaceWorkspace(WorkspaceFill fill) throws IOException {
        finishWorkspaceSwap();
        try {
            fill.into(restoringWorkspace());
        } catch (IOException | RuntimeException e) {
            try {
                FileClones.deleteTree(restoringWorkspace());
            } catch (IOException cleaning) {
                e.addSuppressed(cleaning);
            }
            throw e;
        }
        Files.move(workspace(), replacedWorkspace(), StandardCopyOption.ATOMIC_MOVE);
        Files.move(restoringWorkspace(), workspace(), StandardCopyOption.ATOMIC_MOVE);
        FileClones.deleteTree(replacedWorkspace());
    }

    /**
     * Cleans what an interrupted {@link #replaceWorkspace} left: the live workspace back in place
     * if it was only moved aside, the half-made or replaced one deleted.
     */
    void finishWorkspaceSwap() throws IOException {
        if (!Files.exists(workspace(), LinkOption.NOFOLLOW_LINKS) && Files.isDirectory(replacedWorkspace())) {
            Files.move(replacedWorkspace(), workspace(), StandardCopyOption.ATOMIC_MOVE);
        }
        FileClones.deleteTree(restoringWorkspace());
        FileClones.deleteTree(replacedWorkspace());
    }

    /** Makes a workspace at a path that does not exist yet. */
    @FunctionalInterface
    interface WorkspaceFill {
        void into(Path workspace) throws IOException;
    }

    /** The last lines runsc wrote, for an error. */
    String logTail() {
        try {
            byte[] all = Files.readAllBytes(log());
            int from = Math.max(0, all.length - TAIL_BYTES);
            return new String(all, from, all.length - from, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            return "(no runsc log: " + e.getMessage() + ")";
        }
    }
}
