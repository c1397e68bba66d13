package io.vivarium.apiv1.internal;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.Role;
import io.vivarium.api.VolumeService;
import io.vivarium.api.http.Route;

/** Named volumes (docs/volumes.md): made, listed, shown and deleted by a tenant's users; mounted at create. */
final class VolumeRoutes {
    /** Body of {@code POST /volumes}. */
    record CreateVolume(String name, Integer sizeMib) {
    }

    private VolumeRoutes() {
    }

    static List<Route> of(VolumeService volumes) {
        return List.of(
                new Route("POST", "/volumes", Role.USER, 201, r -> {
                    CreateVolume body = r.body(CreateVolume.class);
                    if (body.sizeMib() == null) {
                        throw ApiException.badRequest("size_mib is required: the volume's size in MiB, e.g. "
                                + "{\"name\": \"data\", \"size_mib\": 1024}");
                    }
                    return volumes.create(r.caller(), body.name(), body.sizeMib());
                }),
                new Route("GET", "/volumes", Role.USER, 200, r -> volumes.list(r.caller())),
                new Route("GET", "/volumes/{name}", Role.USER, 200, r -> volumes.get(r.caller(), r.pathParam("name"))),
                new Route("DELETE", "/volumes/{name}", Role.USER, 204, r -> {
                    volumes.delete(r.caller(), r.pathParam("name"));
                    return null;
                }));
    }
}
