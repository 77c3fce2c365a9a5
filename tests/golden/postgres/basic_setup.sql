-- Schema for basic.frames. Runs before the slot exists, so none of it is streamed.
create type mood as enum ('sad', 'ok', 'happy');

-- Primary key, REPLICA IDENTITY DEFAULT; an enum column makes pgoutput send a Type message.
create table accounts (
  id int primary key,
  name text not null,
  balance numeric(12, 2),
  note varchar(40),
  feeling mood
);

-- REPLICA IDENTITY FULL with a column stored out of line and uncompressed.
create table docs (id int primary key, body text, counter int);
alter table docs replica identity full;
alter table docs alter column body set storage external;

create table trunc_a (id serial primary key, v text);
create table trunc_b (id serial primary key, v text);
create table jsons (id int primary key, j json, jb jsonb);

create publication golden_pub for all tables;
select pg_replication_origin_create('golden_origin');
