/*
 * ringcast's recorder for Apache Tomcat Tribes: one member of a Tribes group with the
 * NonBlockingCoordinator election interceptor (below it the TcpFailureDetector, as
 * Tomcat's own test of the coordinator stacks them), written for ringcast (nothing of
 * Tomcat's code), compiled with javac against Debian's tomcat10-tribes.jar at first use
 * by ringcast.references.tribes.build().
 *
 * It sends the workload it is given to every other member (Tribes' reliable, per-sender
 * ordered point-to-point messages), and prints one JSON object a line on stdout, with
 * System.nanoTime() (CLOCK_MONOTONIC on Linux) nanoseconds:
 *
 *   {"k":"view","t":T,"view":"HEX","members":["n1","n2"],"coordinator":"n1"}
 *   {"k":"submit","t":T,"msg":"n1:7","size":100}
 *   {"k":"deliver","t":T,"msg":"n2:3","size":100}
 *   {"k":"end","t":T,"why":"..."}
 *
 *   TribesRecorder NAME ADDRESS PORT RATE SIZE SECONDS [FROM_NS [FIRST]]
 *
 * It sends from the System.nanoTime() instant FROM_NS (at once if 0 or past) for
 * SECONDS, and stays in the group after that until stopped (SIGTERM or SIGINT). Its
 * messages are numbered from FIRST (1 by default; a restarted member starts past its
 * last life's).
 */
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.catalina.tribes.Channel;
import org.apache.catalina.tribes.ChannelInterceptor;
import org.apache.catalina.tribes.ChannelListener;
import org.apache.catalina.tribes.Member;
import org.apache.catalina.tribes.UniqueId;
import org.apache.catalina.tribes.group.GroupChannel;
import org.apache.catalina.tribes.group.interceptors.NonBlockingCoordinator;
import org.apache.catalina.tribes.group.interceptors.TcpFailureDetector;
import org.apache.catalina.tribes.membership.McastService;
import org.apache.catalina.tribes.transport.ReceiverBase;

public class TribesRecorder {
    static String lastView = "";

    static synchronized void out(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String name(Member m) {
        byte[] p = m == null ? null : m.getPayload();
        return p == null || p.length == 0 ? "?" : new String(p, java.nio.charset.StandardCharsets.UTF_8);
    }

    static String hex(UniqueId id) {
        StringBuilder sb = new StringBuilder();
        for (byte b : id.getBytes()) sb.append(String.format("%02x", b));
        return sb.toString();
    }

    /** The coordinator interceptor, telling the recorder of every event it fires. */
    static class Coordinator extends NonBlockingCoordinator {
        @Override
        public void fireInterceptorEvent(ChannelInterceptor.InterceptorEvent event) {
            super.fireInterceptorEvent(event);
            check(this);
        }
    }

    static synchronized void check(NonBlockingCoordinator c) {
        UniqueId id = c.getViewId();
        Member[] view = c.getView();
        if (id == null || view == null) return;
        String key = hex(id);
        if (key.equals(lastView)) return;
        lastView = key;
        StringBuilder members = new StringBuilder();
        for (Member m : view) members.append(members.length() == 0 ? "\"" : ",\"").append(name(m)).append('"');
        out("{\"k\":\"view\",\"t\":" + System.nanoTime() + ",\"view\":\"" + key + "\",\"members\":["
                + members + "],\"coordinator\":\"" + name(c.getCoordinator()) + "\"}");
    }

    static final long CLOSE_MS = 5000;

    public static void main(String[] args) throws Exception {
        String me = args[0];
        String address = args[1];
        int port = Integer.parseInt(args[2]);
        double rate = Double.parseDouble(args[3]);
        int size = Math.max(64, Integer.parseInt(args[4]));
        double seconds = Double.parseDouble(args[5]);
        long from = args.length > 6 ? Long.parseLong(args[6]) : 0;

        GroupChannel channel = new GroupChannel();
        McastService membership = (McastService) channel.getMembershipService();
        membership.setPayload(me.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        membership.setBind(address);
        ReceiverBase receiver = (ReceiverBase) channel.getChannelReceiver();
        receiver.setAddress(address);
        receiver.setPort(port);
        receiver.setAutoBind(1);
        Coordinator coordinator = new Coordinator();
        channel.addInterceptor(coordinator);
        channel.addInterceptor(new TcpFailureDetector());
        channel.addChannelListener(new ChannelListener() {
            public void messageReceived(Serializable msg, Member sender) {
                String text = (String) msg;
                int cut = text.indexOf(' ');
                String id = cut < 0 ? text : text.substring(0, cut);
                out("{\"k\":\"deliver\",\"t\":" + System.nanoTime() + ",\"msg\":\"" + id
                        + "\",\"size\":" + text.length() + "}");
            }

            public boolean accept(Serializable msg, Member sender) {
                return msg instanceof String;
            }
        });
        Thread stopper = new Thread(() -> {
            out("{\"k\":\"end\",\"t\":" + System.nanoTime() + ",\"why\":\"stopped\"}");
            // leave the group, but not for longer than CLOSE_MS: stopping either way
            Thread closer = new Thread(() -> {
                try {
                    channel.stop(Channel.DEFAULT);
                } catch (Exception e) {
                    // stopping anyway
                }
            });
            closer.setDaemon(true);
            closer.start();
            try {
                closer.join(CLOSE_MS);
            } catch (InterruptedException e) {
                // stopping anyway
            }
        });
        Runtime.getRuntime().addShutdownHook(stopper);
        channel.start(Channel.DEFAULT);

        StringBuilder pad = new StringBuilder();
        while (pad.length() < size) pad.append('.');
        long start = Math.max(System.nanoTime(), from);
        long end = start + (long) (seconds * 1e9);
        long period = rate > 0 ? (long) (1e9 / rate) : 0;
        long next = start;
        long counter = args.length > 7 ? Long.parseLong(args[7]) - 1 : 0;
        while (true) {  // the workload, then a member until stopped (its shutdown hook)
            check(coordinator);
            long now = System.nanoTime();
            Member[] others = channel.getMembers();
            if (now >= next && now < end && others.length > 0) {
                // every message a new id, sent or not: a send that fails for one member
                // (gone) may still have reached the others
                counter++;
                String id = me + ":" + counter;
                String body = id + " " + pad.substring(0, Math.max(0, size - id.length() - 1));
                out("{\"k\":\"submit\",\"t\":" + now + ",\"msg\":\"" + id + "\",\"size\":"
                        + body.length() + "}");
                try {
                    channel.send(others, body, Channel.SEND_OPTIONS_DEFAULT);
                } catch (Exception e) {
                    out("{\"k\":\"send_failed\",\"t\":" + System.nanoTime() + ",\"msg\":\""
                            + id + "\"}");
                }
                next = period > 0 ? Math.max(next + period, now - period) : now;
            }
            long wait = Math.min(10_000_000L, Math.max(0, (now >= end ? now + 10_000_000L : next) - System.nanoTime()));
            Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
        }
    }
}
