package io.vivarium.kit.vmm;

import java.io.IOException;
import java.nio.file.Path;

/**
 * What a {@link VmmDriver} adds whose VMM saves a paused guest's state and loads it into a fresh
 * process; its backend bundle then registers a {@link VmmCheckpoints}. What a VMM saves is the
 * guest's memory and devices, not its disks (it records their paths): the kit keeps a copy of the
 * workspace disk beside it.
 *
 * @since 1.1
 */
public interface VmmSnapshots {

    /** What {@link #save} wrote when all of the guest's memory is in it. */
    String FULL = "full";
    /** What {@link #save} wrote when it wrote only what changed since {@code base} onto a copy of it. */
    String DIFF = "diff";

    /**
     * Writes the state of the paused guest behind {@code apiSocket} into the empty directory {@code
     * dir}; returns {@link #FULL} or {@link #DIFF}. {@code base}, if not null, is the directory of
     * the last state this VMM process saved or loaded: a VMM that tracks the guest's memory writes
     * may then write only what changed since onto a copy of it, the result as complete as a full one.
     */
    String save(Path apiSocket, Path dir, Path base) throws IOException;

    /**
     * Loads the state {@link #save} wrote into {@code dir} into the VMM just started on {@code
     * apiSocket}, which has nothing configured yet, its vsock device bound anew at {@code
     * vsockSocket} (free: a VMM refuses a path that is taken); the guest runs on from where it was,
     * with {@code dir} the base of its next {@link #save}.
     */
    void load(Path apiSocket, Path dir, Path vsockSocket) throws IOException;
}
