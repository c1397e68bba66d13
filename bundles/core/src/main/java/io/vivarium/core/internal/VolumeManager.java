package io.vivarium.core.internal;

import java.util.List;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

import io.vivarium.api.Caller;
import io.vivarium.api.VolumeInfo;
import io.vivarium.api.VolumeService;

/** The {@link VolumeService} ({@code /v1/volumes}) as a component: the {@link Volumes} of the {@link SandboxManager}'s {@link Core}. */
@Component(service = VolumeService.class)
public class VolumeManager implements VolumeService {
    @Reference
    private SandboxManager manager;
    private Volumes volumes;

    @Activate
    void activate() {
        volumes = manager.core().volumes();
    }

    @Override
    public VolumeInfo create(Caller caller, String name, int sizeMib) {
        return volumes.create(caller, name, sizeMib);
    }

    @Override
    public List<VolumeInfo> list(Caller caller) {
        return volumes.list(caller);
    }

    @Override
    public VolumeInfo get(Caller caller, String name) {
        return volumes.get(caller, name);
    }

    @Override
    public void delete(Caller caller, String name) {
        volumes.delete(caller, name);
    }
}
