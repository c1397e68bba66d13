package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import io.vivarium.api.spi.CapturedImage;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.OperationContext;
import io.vivarium.api.spi.StorageStrategies;
import io.vivarium.api.spi.StoredArtifact;
import io.vivarium.common.exec.HostCommand;
import io.vivarium.common.files.FileClones;

/**
 * A standalone copy of a VM snapshot ({@link VmImage}): its RAM and disk compacted by the
 * strategies that read them back, as {@value VmImage#MANIFEST} records them (with their parents,
 * which core does not know), its device state cloned, and a new description naming the compacted
 * artifacts (depth 0, no parent), written last so that a half-made copy is never forkable.
 */
final class VmCompaction {
    private static final FileClones CLONES = new FileClones();

    private VmCompaction() {
    }

    static CapturedImage compact(Path from, Path to, StorageStrategies storage, OperationContext context)
            throws IOException {
        VmImage image = VmImage.read(from);
        context.checkpoint("compacting the RAM of " + from);
        StoredArtifact ram = storage.reader(image.memory()).compact(image.memory(), to.resolve(VmImage.RAM), context);
        context.checkpoint("compacting the disk of " + from);
        StoredArtifact disk = storage.reader(image.disk()).compact(image.disk(), to.resolve(VmImage.DISK), context);
        CLONES.cloneOrCopy(from.resolve(VmImage.DEVICES), to.resolve(VmImage.DEVICES),
                () -> HostCommand.timeFor(context.remaining()));
        new VmImage(image.memoryMib(), image.vcpus(), image.guestImage(), image.agent(), image.incoming(), ram, disk)
                .write(to);
        return new CapturedImage(List.of(ram, disk), 0, Images.FILES_AND_MEMORY);
    }
}
