-- Workload recorded into basic.frames (see record_basic.sh). Run as one psql session.

-- Insert with a NULL value; update a non-key column; update the key; delete.
insert into accounts values (1, 'alice', 100.50, null, 'happy');
update accounts set balance = 90.25 where id = 1;
update accounts set id = 2 where id = 1;
delete from accounts where id = 2;

-- One transaction with several rows and operations.
begin;
insert into accounts values (10, 'a', 1, 'x', 'ok'), (11, 'b', 2, 'y', 'sad'),
                            (12, 'c', 3, null, null);
update accounts set note = 'multi' where id in (10, 11);
delete from accounts where id = 12;
commit;

-- A 9600-byte value of chained md5 digests (does not compress), TOASTed out of line. The
-- update leaves it alone, so the new tuple reports it unchanged while the FULL old row has it.
insert into docs
  select 1, string_agg(h, '' order by i), 0
  from (with recursive c(i, h) as (select 1, md5('golden') union all
                                   select i + 1, md5(h) from c where i < 300)
        select i, h from c) s;
update docs set counter = counter + 1 where id = 1;
delete from docs where id = 1;

-- json and jsonb.
insert into jsons values (1, '{"a": [1, 2, {"b": null}], "s": "x\"y"}',
                          '{"z": 1, "a": [true, false], "u": "caf\u00e9"}');

-- TRUNCATE of two tables at once, restarting their sequences.
insert into trunc_a (v) values ('a1'), ('a2');
insert into trunc_b (v) values ('b1');
truncate trunc_a, trunc_b restart identity;

-- Logical decoding messages: transactional on its own, non-transactional, binary content,
-- and one inside a transaction with a row change.
select pg_logical_emit_message(true, 'golden', 'transactional hello');
select pg_logical_emit_message(false, 'golden', 'non-transactional');
select pg_logical_emit_message(false, 'golden-bin', '\xff00fe'::bytea);
begin;
insert into accounts values (20, 'with message', 0, null, null);
select pg_logical_emit_message(true, 'golden', 'inside a transaction');
commit;

-- A transaction replayed from a replication origin: pgoutput sends an Origin message.
select pg_replication_origin_session_setup('golden_origin');
begin;
select pg_replication_origin_xact_setup('0/AABBCC', '2024-01-02 03:04:05+00');
insert into accounts values (30, 'from origin', 0, null, null);
commit;
select pg_replication_origin_session_reset();
