package io.vivarium.state.postgres.internal;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.vivarium.api.state.RecordCollection;
import io.vivarium.api.state.StateStore;
import io.vivarium.api.state.StateStoreProvider;
import io.vivarium.api.state.StoreEvents;
import io.vivarium.common.state.PostgresUrl;
import io.vivarium.common.state.StoreOffer;

import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.Designate;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The PostgreSQL store, offered to core when the operator chose it ({@link StateStoreProvider#CHOICE}
 * {@code postgres}: the launcher sets it when the state-postgres feature runs). The database's URL
 * comes from {@code --state-url} (framework property {@value #URL_PROPERTY}) or this component's
 * {@code url}.
 */
@Component(immediate = true, service = {}, configurationPid = PostgresStores.PID)
@Designate(ocd = PostgresStores.Config.class)
public final class PostgresStores implements StateStoreProvider {
    static final String PID = "io.vivarium.state.postgres";
    static final String NAME = "postgres";
    static final String URL_PROPERTY = "vivarium.state.url";

    @ObjectClassDefinition(name = "Vivarium state store on PostgreSQL")
    public @interface Config {
        @AttributeDefinition(description = "postgresql://USER:PASSWORD@HOST:PORT/DATABASE; empty: the framework property "
                + URL_PROPERTY + " (--state-url)")
        String url() default "";

        @AttributeDefinition(description = "Connections in the pool")
        int pool__size() default 8;

        @AttributeDefinition(description = "How long a request waits for a connection before it answers 503")
        long connection__wait__millis() default 2000;

        @AttributeDefinition(description = "How long one statement may run")
        long statement__timeout__millis() default 5000;

        @AttributeDefinition(description = "Retry-After of a 503 while the database is away")
        int retry__after__seconds() default 2;
    }

    private final StoreOffer offer = new StoreOffer();
    private volatile PostgresUrl url;
    private volatile Config config;

    @Activate
    void activate(BundleContext ctx, Config config) {
        if (!StoreOffer.chosen(ctx, NAME, false)) {
            return;
        }
        this.config = config;
        this.url = PostgresUrl.parse(config.url().isBlank() ? ctx.getProperty(URL_PROPERTY) : config.url());
        offer.offer(ctx, NAME, this);
    }

    @Deactivate
    void deactivate() {
        offer.withdraw();
    }

    @Override
    public StateStore open(Path stateDir, String node, List<RecordCollection<?>> collections, StoreEvents events)
            throws IOException {
        Config c = config;
        Database db = Database.open(url, Math.max(2, c.pool__size()), Duration.ofMillis(c.connection__wait__millis()),
                Duration.ofMillis(c.statement__timeout__millis()), Math.max(1, c.retry__after__seconds()));
        return PostgresStateStore.open(db, stateDir, node, collections, events);
    }

    @Override
    public String describe(Path stateDir) {
        return "PostgreSQL at " + url;
    }
}
