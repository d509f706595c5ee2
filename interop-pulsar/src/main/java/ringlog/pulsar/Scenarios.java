package ringlog.pulsar;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.bookkeeper.client.api.LedgerMetadata;
import org.apache.bookkeeper.net.BookieId;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.common.policies.data.ManagedLedgerInternalStats.LedgerInfo;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;
import org.apache.pulsar.common.policies.data.RetentionPolicies;

/** The scenarios; each returns its numbers for the PASS line, or throws for FAIL. */
final class Scenarios {
    /** The step a scenario is at, for a FAIL or timeout line. */
    static volatile String step = "";

    private Scenarios() {}

    static void step(String what) {
        step = what;
    }

    static String topic(String name) {
        return "persistent://public/default/" + name;
    }

    /** Ledger ids of the topic's managed ledger, oldest first (the last is the open one). */
    static List<Long> ledgers(PulsarCluster cluster, String topic) throws Exception {
        List<Long> ids = new ArrayList<>();
        for (LedgerInfo info : cluster.admin().topics().getInternalStats(topic).ledgers) {
            ids.add(info.ledgerId);
        }
        return ids;
    }

    /**
     * Sync sends, async sends with batching off (100 outstanding) and on (1,000 outstanding),
     * all to one topic; then a reader from the earliest message gets every one, in order.
     */
    static String produceConsume(PulsarCluster cluster) throws Exception {
        Options o = cluster.options;
        String topic = topic("produce-consume");
        long sync = o.messages(5_000, 1_000);
        long async = o.messages(100_000, 20_000);
        long batched = o.messages(100_000, 20_000);
        PulsarClient client = cluster.client();
        step("sync sends");
        double syncRate;
        try (Producer<byte[]> producer = Messages.producer(client, topic, false, 1)) {
            syncRate = Messages.sendSync(producer, topic, 0, sync);
        }
        step("async sends, batching off");
        Messages.Sent plain;
        try (Producer<byte[]> producer = Messages.producer(client, topic, false, 100)) {
            plain = Messages.sendAsync(producer, topic, sync, async, 100, acked -> true);
        }
        check(plain, async, "async sends");
        step("async sends, batching on");
        Messages.Sent batch;
        try (Producer<byte[]> producer = Messages.producer(client, topic, true, 1000)) {
            batch = Messages.sendAsync(producer, topic, sync + async, batched, 1000, acked -> true);
        }
        check(batch, batched, "batched sends");
        step("read from earliest");
        long start = System.nanoTime();
        long read = Messages.readAll(client, topic);
        double readRate = read / ((System.nanoTime() - start) / 1e9);
        long total = sync + async + batched;
        Failure.check(read == total, "read " + read + " messages, expected " + total);
        return String.format("messages=%d sync_msgs_s=%.0f async_msgs_s=%.0f batched_msgs_s=%.0f"
                + " read_msgs_s=%.0f ledgers=%d", total, syncRate, plain.perSecond(),
                batch.perSecond(), readRate, ledgers(cluster, topic).size());
    }

    private static void check(Messages.Sent sent, long expected, String what) {
        if (sent.error() != null) {
            throw new Failure(what + ": " + sent.acked() + " of " + expected + " acked, then "
                    + sent.error());
        }
        Failure.check(sent.acked() == expected, what + ": " + sent.acked() + " of " + expected
                + " acked");
    }

    /**
     * Async sends (100 outstanding); a third of the way, SIGKILL of the first bookie of the
     * open ledger's ensemble. Every send must still succeed; the broker's BookKeeper client must
     * replace the dead bookie (a ledger with a second ensemble without it); a reader gets every
     * message while the bookie is still down.
     */
    static String bookieKill(PulsarCluster cluster) throws Exception {
        String topic = topic("bookie-kill");
        long count = cluster.options.messages(60_000, 15_000);
        PulsarClient client = cluster.client();
        Bookie[] victim = new Bookie[1];
        long[] killedAt = new long[1];
        step("async sends, SIGKILL of a bookie at a third");
        Messages.Sent sent;
        try (Producer<byte[]> producer = Messages.producer(client, topic, false, 100)) {
            sent = Messages.sendAsync(producer, topic, 0, count, 100, acked -> {
                if (victim[0] == null && acked >= count / 3) {
                    try {
                        List<Long> ids = ledgers(cluster, topic);
                        long open = ids.get(ids.size() - 1);
                        LedgerMetadata metadata = cluster.ledger(open);
                        List<BookieId> ensemble = metadata.getAllEnsembles().lastEntry().getValue();
                        victim[0] = cluster.byId(ensemble.get(0).toString());
                        victim[0].kill();
                        killedAt[0] = acked;
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }
                return true;
            });
        }
        check(sent, count, "sends with a bookie SIGKILLed after " + killedAt[0]);
        step("ensemble change in the ledger metadata");
        String dead = victim[0].id();
        int changed = 0;
        for (long id : ledgers(cluster, topic)) {
            LedgerMetadata metadata = cluster.ledger(id);
            if (metadata.getAllEnsembles().size() > 1) {
                changed += 1;
                Failure.check(!metadata.getAllEnsembles().lastEntry().getValue().toString()
                        .contains(dead), "ledger " + id + "'s last ensemble still has " + dead);
            }
        }
        Failure.check(changed > 0, "no ledger of " + topic + " changed ensemble after "
                + dead + " was killed");
        step("read everything while " + dead + " is down");
        Failure.check(!victim[0].alive(), dead + " came back");
        long read = Messages.readAll(client, topic);
        Failure.check(read == count, "read " + read + " messages, expected " + count);
        return String.format("messages=%d killed=%s at_acked=%d ledgers_with_ensemble_change=%d"
                + " msgs_s=%.0f", count, victim[0].name, killedAt[0], changed, sent.perSecond());
    }

    /**
     * Acknowledged sends, then async sends in flight when the broker is SIGKILLed. A new broker
     * (same ports) opens the topic: BookKeeper recovery of the open ledger, which fences it on
     * the bookies and closes it. A reader must get every acknowledged message, and nothing out
     * of order or damaged (messages written but not acknowledged before the kill may be there).
     */
    static String brokerKill(PulsarCluster cluster) throws Exception {
        String topic = topic("broker-kill");
        long first = cluster.options.messages(20_000, 5_000);
        long second = cluster.options.messages(40_000, 10_000);
        PulsarClient writer = PulsarClient.builder().serviceUrl(cluster.broker.serviceUrl())
                .build();
        long[] open = new long[1];
        long[] ackedAtKill = new long[1];
        try {
            Producer<byte[]> producer = Messages.producer(writer, topic, false, 100);
            step("acknowledged sends");
            check(Messages.sendAsync(producer, topic, 0, first, 100, acked -> true), first,
                    "sends before the kill");
            step("async sends, SIGKILL of the broker halfway");
            Messages.Sent sent = Messages.sendAsync(producer, topic, first, second, 100, acked -> {
                if (acked < second / 2) {
                    return true;
                }
                try {
                    // Kill in the middle of a ledger, one whose metadata is still open, so that
                    // only the next broker's recovery can close it (not a rollover).
                    PersistentTopicInternalStats stats =
                            cluster.admin().topics().getInternalStats(topic);
                    long id = stats.ledgers.get(stats.ledgers.size() - 1).ledgerId;
                    if (stats.currentLedgerEntries < 100
                            || stats.currentLedgerEntries > Broker.ENTRIES_PER_LEDGER - 300
                            || cluster.ledger(id).isClosed()) {
                        return true;
                    }
                    open[0] = id;
                    cluster.broker.kill();
                    // No resends to the next broker: they could duplicate a message that was
                    // written but whose acknowledgement the kill lost. Pending sends stay
                    // pending; the count of acknowledged ones is final from here.
                    writer.shutdown();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                return false;
            });
            ackedAtKill[0] = first + sent.acked();
        } finally {
            writer.shutdown();
        }
        Failure.check(!cluster.broker.alive(), "the broker was never killed (no open ledger"
                + " between 100 and " + (Broker.ENTRIES_PER_LEDGER - 300) + " entries)");
        step("broker restart");
        long start = System.nanoTime();
        cluster.broker.waitExpired();
        cluster.broker.start();
        double restart = (System.nanoTime() - start) / 1e9;
        step("read everything after recovery");
        long read = Messages.readAll(cluster.client(), topic);
        Failure.check(read >= ackedAtKill[0], "read " + read + " messages, but "
                + ackedAtKill[0] + " were acknowledged before the kill");
        step("the ledger open at the kill is closed by recovery");
        LedgerMetadata metadata = cluster.ledger(open[0]);
        Failure.check(metadata.isClosed(), "ledger " + open[0]
                + " (open when the broker died) is not closed after the restart: " + metadata);
        return String.format("acked_before_kill=%d read=%d recovered_ledger=%d last_entry=%d"
                + " restart_s=%.1f", ackedAtKill[0], read, open[0], metadata.getLastEntryId(),
                restart);
    }

    /**
     * With one bookie down (its registration expired), a topic's ledgers land on the other two;
     * then one of those is killed too, and a reader must get every message from the last one.
     */
    static String singleBookieReads(PulsarCluster cluster) throws Exception {
        String topic = topic("single-bookie");
        long count = cluster.options.messages(30_000, 5_000);
        Bookie down = cluster.bookies.get(2);
        Bookie killed = cluster.bookies.get(1);
        Bookie last = cluster.bookies.get(0);
        step("SIGKILL " + down.name + ", wait for its registration to expire");
        down.killAndWaitExpired();
        Thread.sleep(1000);
        PulsarClient client = cluster.client();
        step("async sends on two bookies");
        try (Producer<byte[]> producer = Messages.producer(client, topic, false, 100)) {
            check(Messages.sendAsync(producer, topic, 0, count, 100, acked -> true), count,
                    "sends");
        }
        List<Long> ids = ledgers(cluster, topic);
        for (long id : ids) {
            Set<String> where = cluster.bookiesOf(id);
            Failure.check(where.equals(Set.of(last.id(), killed.id())), "ledger " + id + " is on "
                    + where + ", expected " + last.id() + " and " + killed.id());
        }
        step("SIGKILL " + killed.name + ", read everything from " + last.name);
        killed.kill();
        long start = System.nanoTime();
        long read = Messages.readAll(client, topic);
        double seconds = (System.nanoTime() - start) / 1e9;
        Failure.check(read == count, "read " + read + " messages, expected " + count);
        return String.format("messages=%d ledgers=%d served_by=%s read_msgs_s=%.0f", count,
                ids.size(), last.name, read / seconds);
    }

    /**
     * A namespace without retention; a subscription, then enough messages for several ledgers
     * (managedLedgerMaxEntriesPerLedger); everything consumed and acknowledged; trim removes the
     * consumed ledgers' metadata from ZooKeeper, and topic deletion the rest. Then the bookies'
     * garbage collection gives their data directories' space back.
     */
    static String rolloverRetentionGc(PulsarCluster cluster) throws Exception {
        String namespace = "public/gc";
        String topic = "persistent://" + namespace + "/rollover";
        long count = cluster.options.messages(60_000, 30_000);
        cluster.admin().namespaces().createNamespace(namespace);
        cluster.admin().namespaces().setRetention(namespace, new RetentionPolicies(0, 0));
        PulsarClient client = cluster.client();
        long before = cluster.dataBytes();
        step("subscribe, async sends");
        try (Consumer<byte[]> consumer = client.newConsumer(Schema.BYTES).topic(topic)
                .subscriptionName("all").receiverQueueSize(1000)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
                Producer<byte[]> producer = Messages.producer(client, topic, false, 100)) {
            check(Messages.sendAsync(producer, topic, 0, count, 100, acked -> true), count,
                    "sends");
            List<Long> ids = ledgers(cluster, topic);
            long minimum = count / Broker.ENTRIES_PER_LEDGER;
            Failure.check(ids.size() >= minimum, "only " + ids.size() + " ledgers for " + count
                    + " entries at " + Broker.ENTRIES_PER_LEDGER + " per ledger");
            for (long id : ids) {
                Failure.check(cluster.zk.ledgerIds().contains(id), "ledger " + id
                        + " has no metadata in ZooKeeper");
            }
            step("consume and acknowledge everything");
            Messages.consumeAndAck(consumer, topic, count);
            // The Java bookie moves entries from its journal to the ledger directory only at
            // its next flush: wait until the data directories hold at least half of the
            // replicas written (2 per message), or the space check below would prove nothing.
            step("the bookies' data directories grow");
            long expected = count * Messages.SIZE * 2;
            long written = cluster.dataBytes();
            long deadline = System.currentTimeMillis() + 60_000;
            while (written - before < expected / 2) {
                Failure.check(System.currentTimeMillis() < deadline, String.format(
                        "the bookies' data directories grew by %d bytes in 60 s, for %d bytes"
                        + " of replicas written", written - before, expected));
                Thread.sleep(1000);
                written = cluster.dataBytes();
            }
            step("trim: the consumed ledgers' metadata goes");
            long open = ids.get(ids.size() - 1);
            List<Long> trimmed = ids.subList(0, ids.size() - 1);
            deadline = System.currentTimeMillis() + 60_000;
            while (true) {
                cluster.admin().topics().trimTopic(topic);
                List<Long> left = new ArrayList<>(cluster.zk.ledgerIds());
                left.retainAll(trimmed);
                if (left.isEmpty()) {
                    break;
                }
                Failure.check(System.currentTimeMillis() < deadline, "60 s after trim, "
                        + left.size() + " consumed ledgers still have metadata: " + left);
                Thread.sleep(500);
            }
            List<Long> remaining = ledgers(cluster, topic);
            consumer.close();
            producer.close();
            step("delete the topic: every ledger's metadata goes");
            cluster.admin().topics().delete(topic, true);
            List<Long> all = new ArrayList<>(ids);
            all.addAll(remaining);
            deadline = System.currentTimeMillis() + 60_000;
            while (true) {
                List<Long> left = new ArrayList<>(cluster.zk.ledgerIds());
                left.retainAll(all);
                if (left.isEmpty()) {
                    break;
                }
                Failure.check(System.currentTimeMillis() < deadline, "60 s after deletion, "
                        + left + " still have metadata");
                Thread.sleep(500);
            }
            step("garbage collection gives the space back");
            long start = System.nanoTime();
            long grown = written - before;
            long now = written;
            deadline = System.currentTimeMillis() + 120_000;
            // At least 70% of what the topic added: the open segment or entry log that also
            // holds the tail of the topic's data (and other topics') stays.
            while (now - before > grown * 0.3) {
                Failure.check(System.currentTimeMillis() < deadline, String.format(
                        "bookies' data %d bytes before, %d written, still %d 120 s after the"
                        + " deletion", before, written, now));
                Thread.sleep(1000);
                now = cluster.dataBytes();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            return String.format("messages=%d ledgers=%d trimmed=%d kept_open=%d"
                    + " data_bytes_before=%d written=%d after_gc=%d gc_s=%.1f", count,
                    ids.size(), trimmed.size(), open, before, written, now, seconds);
        }
    }

    /**
     * A bookie lost for good: SIGKILL, its data directory deleted, never restarted. Its
     * ledgers (the topic's are closed first, by an unload) are re-replicated by BookKeeper's
     * AutoRecovery daemon onto the two bookies left; then one of those is killed too, and a
     * reader must get every message from the last one, which holds a copy of each ledger only if
     * the re-replication wrote it there. Runs last: the lost bookie does not come back.
     */
    static String bookieLostAutoRecovery(PulsarCluster cluster) throws Exception {
        String topic = topic("bookie-lost");
        long count = cluster.options.messages(20_000, 5_000);
        PulsarClient client = cluster.client();
        step("async sends on three bookies");
        try (Producer<byte[]> producer = Messages.producer(client, topic, false, 100)) {
            check(Messages.sendAsync(producer, topic, 0, count, 100, acked -> true), count,
                    "sends");
        }
        List<Long> ids = ledgers(cluster, topic);
        step("unload the topic (its ledgers are closed)");
        cluster.admin().topics().unload(topic);
        Bookie lost = cluster.byId(cluster.ledger(ids.get(0)).getAllEnsembles().firstEntry()
                .getValue().get(0).toString());
        int had = 0;
        for (long id : ids) {
            had += cluster.bookiesOf(id).contains(lost.id()) ? 1 : 0;
        }
        step("SIGKILL " + lost.name + " and delete its data");
        lost.killAndWaitExpired();
        lost.deleteStorage();
        AutoRecovery recovery = new AutoRecovery(cluster.dir.resolve("autorecovery"), cluster.zk);
        try {
            step("AutoRecovery re-replicates " + had + " ledgers of the topic");
            long start = System.nanoTime();
            recovery.start();
            long deadline = System.currentTimeMillis() + 240_000;
            while (true) {
                long left = 0;
                for (long id : ids) {
                    left += cluster.bookiesOf(id).contains(lost.id()) ? 1 : 0;
                }
                if (left == 0) {
                    break;
                }
                recovery.checkAlive("re-replicating");
                Failure.check(System.currentTimeMillis() < deadline, left + " of " + had
                        + " ledgers still name " + lost.id() + " 240 s after AutoRecovery"
                        + " started; " + recovery.log());
                Thread.sleep(500);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            List<Bookie> left = new ArrayList<>(cluster.bookies);
            left.remove(lost);
            Bookie killed = left.get(0);
            Bookie last = left.get(1);
            step("load the topic, SIGKILL " + killed.name + ", read everything from " + last.name);
            try (org.apache.pulsar.client.api.Reader<byte[]> reader =
                    Messages.reader(client, topic)) {
                killed.kill();
                long read = Messages.readAll(reader, topic);
                Failure.check(read == count, "read " + read + " messages, expected " + count);
            }
            return String.format("messages=%d ledgers=%d lost=%s ledgers_rereplicated=%d"
                    + " rereplication_s=%.1f served_by=%s", count, ids.size(), lost.name, had,
                    seconds, last.name);
        } finally {
            recovery.stop();
        }
    }
}
