package io.vivarium.fleet.internal;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.Role;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.common.testpoints.TestPoints;

/**
 * Brings a tag's image to the node a fork runs on: the holder issues a ticket and lists the image,
 * the node that lacks it fetches each file straight from the holder over the holder's port (the
 * master carries no image bytes), and the master records the copy, so that the next fork there
 * fetches nothing. One fetch per tag and node at a time: forks that need the same copy wait for it.
 * A holder that dials in has no address to fetch from: its tags fork only there.
 */
final class ImageMoves {
    private final Nodes nodes;
    private final Placements placements;
    private final Forwarding forwarding;
    private final Supplier<RuntimeObserver> observer;
    private final Map<String, Object> fetching = new ConcurrentHashMap<>();

    ImageMoves(Nodes nodes, Placements placements, Forwarding forwarding, Supplier<RuntimeObserver> observer) {
        this.nodes = nodes;
        this.placements = placements;
        this.forwarding = forwarding;
        this.observer = observer;
    }

    /** Makes {@code target} hold the image of the caller's tag: nothing to do if it does already. */
    void bring(Caller caller, String tag, String target) {
        if (held(caller, tag, target)) {
            return;
        }
        synchronized (fetching.computeIfAbsent(caller.tenant() + "\n" + tag + "\n" + target, k -> new Object())) {
            if (held(caller, tag, target)) {
                return;
            }
            TagPlacement tp = placements.tag(caller.tenant(), tag)
                    .orElseThrow(() -> ApiException.notFound("no snapshot " + tag + "; GET /v1/snapshots lists yours"));
            NodeRecord holder = nodes.record(tp.node()).orElseThrow(() -> ApiException.unavailable("node " + tp.node()
                    + ", which holds snapshot " + tag + ", is revoked or gone; add it again to fork its tags", 30));
            if (holder.pulls()) {
                throw ApiException.conflict("snapshot " + tag + " is on node " + holder.id() + ", which dials in and has no "
                        + "address another node can fetch the image from: its children run on " + holder.id());
            }
            fetch(new Caller(caller.tenant(), Role.OPERATOR), tag, holder, target);
            try {
                placements.updateTag(caller.tenant(), tag, t -> t.withCopy(target));
            } catch (IOException e) {
                // the node keeps its copy: the next fork there asks it to fetch again, which it answers at once
                throw ApiException.internal("node " + target + " holds a copy of " + tag + " but the master could not record it", e);
            }
        }
    }

    /** The holder's ticket and manifest, then the target's fetch, timed for the observer. */
    private void fetch(Caller master, String tag, NodeRecord holder, String target) {
        long start = System.nanoTime();
        long bytes = 0;
        boolean ok = false;
        try {
            ImageSurface.Issued issued = forwarding.call(holder.id(), "POST", "/v1/node/images/tickets", master,
                    new ImageSurface.TicketRequest(tag), ImageSurface.Issued.class);
            bytes = issued.manifest().bytes();
            forwarding.call(target, "POST", "/v1/node/images/fetch", master, new ImageSurface.FetchRequest(holder.address(),
                    holder.certificateSha256(), issued.ticket(), issued.manifest()), null);
            ok = true;
        } finally {
            observer.get().imageFetched(target, ok, bytes, System.nanoTime() - start);
        }
        TestPoints.reach("fleet.image.fetched");
    }

    private boolean held(Caller caller, String tag, String target) {
        return placements.tag(caller.tenant(), tag).map(t -> t.heldBy(target)).orElse(false);
    }
}
