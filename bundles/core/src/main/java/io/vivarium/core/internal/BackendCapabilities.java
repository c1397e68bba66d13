package io.vivarium.core.internal;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.Capability;
import io.vivarium.api.spi.Checkpoints;
import io.vivarium.api.spi.Images;
import io.vivarium.api.spi.Hibernation;
import io.vivarium.api.spi.PauseControl;
import io.vivarium.api.spi.PowerControl;
import io.vivarium.api.spi.ScratchRuns;

/**
 * What a registered backend can do, said once: the {@link Capability#REPORTED} names (and names of
 * its own) it reports, plus what core derives from the seams its bundle registered and from
 * whether it runs machines. A derived name the backend reports itself is not believed (and logged
 * once): a capability it claims without implementing it would answer 501 where clients were told
 * it works.
 */
final class BackendCapabilities {
    private static final System.Logger LOG = System.getLogger(BackendCapabilities.class.getName());
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private BackendCapabilities() {
    }

    /** The capability names of {@code e}, sorted. */
    static List<String> of(BackendRegistry.Entry e) {
        Set<String> names = new TreeSet<>();
        for (String reported : e.backend().capabilities()) {
            if (Capability.DERIVED.contains(reported) || !Capability.NAME.matcher(reported).matches()) {
                if (WARNED.add(e.name() + "/" + reported)) {
                    LOG.log(Level.WARNING, "backend " + e.name() + " reports the capability '" + reported
                            + "', which core " + (Capability.DERIVED.contains(reported)
                                    ? "derives from what a backend implements" : "does not accept as a name")
                            + "; ignored");
                }
                continue;
            }
            names.add(reported);
        }
        if (e.backend().machine()) {
            names.add(Capability.VCPUS);
        }
        if (e.seam(Images.class).isPresent()) {
            names.addAll(List.of(Capability.SNAPSHOT, Capability.BRANCH, Capability.FORK));
        }
        if (e.seam(Checkpoints.class).isPresent()) {
            names.addAll(List.of(Capability.CHECKPOINTS, Capability.DRY_RUN));
        }
        if (e.seam(ScratchRuns.class).isPresent()) {
            names.add(Capability.DRY_RUN);
        }
        if (e.seam(PowerControl.class).isPresent()) {
            names.add(Capability.STOP_START);
        }
        if (e.seam(PauseControl.class).isPresent()) {
            names.add(Capability.PAUSE);
        }
        if (e.seam(Hibernation.class).isPresent()) {
            names.add(Capability.HIBERNATE);
        }
        return List.copyOf(names);
    }
}
