#include <stdio.h>

int mod035(int x)
{
    return x + 35;
}
