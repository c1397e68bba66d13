package io.vivarium.apiv1.internal;

import java.util.List;
import java.util.Locale;

import io.vivarium.api.ApiException;
import io.vivarium.api.BranchRequest;
import io.vivarium.api.CompactRequest;
import io.vivarium.api.Role;
import io.vivarium.api.SnapshotRequest;
import io.vivarium.api.SnapshotService;
import io.vivarium.api.http.Route;
import io.vivarium.api.http.RouteRequest;

/**
 * The snapshot registry's routes: {@code /snapshots} for every role (scoped to the caller's
 * tenant), a branch, which reads a sandbox's state, for admins, and {@code touch}. The fork form of
 * {@code POST /sandboxes} is in {@link V1Surface}.
 */
final class SnapshotRoutes {

    private SnapshotRoutes() {
    }

    static List<Route> of(SnapshotService snapshots) {
        return List.of(
                new Route("POST", "/snapshots", Role.USER, 201, r -> {
                    SnapshotRequest build = r.body(SnapshotRequest.class);
                    return ProgressEvents.asked(r) ? ProgressEvents.start(p -> snapshots.build(r.caller(), build, p))
                            : snapshots.build(r.caller(), build);
                }),
                new Route("GET", "/snapshots", Role.USER, 200, r -> snapshots.snapshots(r.caller())),
                new Route("GET", "/snapshots/{tag}/info", Role.USER, 200,
                        r -> snapshots.info(r.caller(), r.pathParam("tag"))),
                new Route("DELETE", "/snapshots/{tag}", Role.USER, 204, r -> {
                    snapshots.deleteSnapshot(r.caller(), r.pathParam("tag"), flag(r, "cascade"), flag(r, "force"));
                    return null;
                }),
                new Route("POST", "/snapshots/{tag}/compact", Role.USER, 201,
                        r -> snapshots.compact(r.caller(), r.pathParam("tag"), r.body(CompactRequest.class))),
                new Route("POST", "/sandboxes/{id}/branch", Role.ADMIN, 201,
                        r -> snapshots.branch(r.caller(), r.pathParam("id"), branchRequest(r))),
                new Route("POST", "/sandboxes/{id}/touch", Role.USER, 204, r -> {
                    snapshots.touch(r.caller(), r.pathParam("id"));
                    return null;
                }));
    }

    private static BranchRequest branchRequest(RouteRequest r) {
        return r.body(BranchBody.class).branchRequest();
    }

    private static boolean flag(RouteRequest r, String name) {
        return r.queryParam(name).map(v -> switch (v.toLowerCase(Locale.ROOT)) {
            case "true", "1" -> true;
            case "false", "0", "" -> false;
            default -> throw ApiException.badRequest("?" + name + "= takes true or false, got \"" + v + "\"");
        }).orElse(false);
    }
}
