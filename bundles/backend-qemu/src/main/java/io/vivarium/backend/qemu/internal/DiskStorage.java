package io.vivarium.backend.qemu.internal;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.spi.ArtifactKind;
import io.vivarium.api.spi.StorageStrategy;

/**
 * The storage strategies for VM disks registered right now (the content of the component's dynamic
 * reference): the backend makes each VM's disk through one of them and names none.
 */
final class DiskStorage {

    private final List<StorageStrategy> strategies = new CopyOnWriteArrayList<>();

    static DiskStorage of(StorageStrategy... strategies) {
        DiskStorage storage = new DiskStorage();
        List.of(strategies).forEach(storage::add);
        return storage;
    }

    void add(StorageStrategy strategy) {
        strategies.add(strategy);
    }

    void remove(StorageStrategy strategy) {
        strategies.remove(strategy);
    }

    /** The first strategy that handles disks in {@code dir} without falling back. */
    Optional<StorageStrategy> forDir(Path dir) {
        return strategies.stream()
                .filter(s -> s.kinds().contains(ArtifactKind.DISK) && s.supports(ArtifactKind.DISK, dir))
                .findFirst();
    }

    /** Why {@link #forDir} finds none, saying what to install. */
    String missing(Path dir) {
        List<String> disks = strategies.stream().filter(s -> s.kinds().contains(ArtifactKind.DISK))
                .map(StorageStrategy::name).toList();
        return disks.isEmpty()
                ? "no storage strategy for VM disks is installed: the qemu feature's storage-qcow2 bundle provides one"
                : "no storage strategy for VM disks works in " + dir + " (" + String.join(", ", disks)
                        + " registered; qcow2 needs qemu-img: apt-get install qemu-utils)";
    }
}
