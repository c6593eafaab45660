-- A login user, a member of one access role. The password arrives hashed (SCRAM or MD5) and
-- is bound like any value: psycopg2 binds parameters on the client, so a utility statement
-- such as this one takes them too.
CREATE ROLE {login} WITH LOGIN INHERIT PASSWORD %(password)s IN ROLE {role};
